// The per-layer statistics kernels picked by device and dtype: CPU loops (f32; f16 widened to f32
// first), CUDA launches (f32, bf16 or f16) on the compute stream.
#include "train/layer_stats_device.h"

#include "kernels/cpu/layer_stats.h"
#include "tensor/error.h"

#if NANODIST_WITH_CUDA
#include "kernels/cuda/layer_stats.h"
#include "tensor/cuda_stream.h"
#endif

namespace nd::train {
namespace {

void check_out(const Tensor& out, const Tensor& x, int64_t last) {
  ND_CHECK(out.dtype() == DType::F64 && out.device() == x.device(),
           "layer statistics: the sums must be f64 beside " << x.str() << ", got " << out.str());
  ND_CHECK(last <= out.numel(), "layer statistics: index " << last << " past the " << out.numel() << " sums");
}

template <typename T>
StatSlot<T> slot_of(const Tensor& x, const Tensor* ref, int64_t index) {
  StatSlot<T> s;
  s.x = static_cast<const T*>(x.raw_data());
  s.ref = ref && ref->defined() ? static_cast<const T*>(ref->raw_data()) : nullptr;
  s.n = x.numel();
  s.out = index;
  return s;
}

// A CPU tensor as f32: itself, or the f32 copy of an f16 one (the emulated fp16 path); the CPU
// statistics kernels read f32.
Tensor f32_on_cpu(const Tensor& t) {
  if (t.dtype() == DType::F16) return t.to(DType::F32);
  check_dtype(t, DType::F32, "layer statistics on the CPU (f32 or f16)");
  return t;
}

}  // namespace

#if NANODIST_WITH_CUDA
struct StatTensorList::DeviceLists {
  std::unique_ptr<cuda::DeviceSlots<StatSlot<float>>> f32;
  std::unique_ptr<cuda::DeviceSlots<StatSlot<bf16>>> bf16s;
  std::unique_ptr<cuda::DeviceSlots<StatSlot<f16>>> f16s;
};
#else
struct StatTensorList::DeviceLists {};
#endif

void add_tensor_stats(const Tensor& x, const Tensor* ref, Tensor& out, int64_t index) {
  check_out(out, x, index + kStatsPerSlot);
  ND_CHECK(!ref || !ref->defined() || (ref->numel() == x.numel() && ref->dtype() == x.dtype()),
           "layer statistics: reference " << ref->str() << " does not match " << x.str());
  double* sums = out.data<double>();
  if (x.device().is_cpu()) {
    const Tensor xf = f32_on_cpu(x), rf = ref && ref->defined() ? f32_on_cpu(*ref) : Tensor();
    cpu::tensor_stats(std::vector<StatSlot<float>>{slot_of<float>(xf, &rf, index)}, sums);
    return;
  }
#if NANODIST_WITH_CUDA
  if (x.dtype() == DType::BF16)
    cuda::tensor_stats(slot_of<bf16>(x, ref, index), sums);
  else if (x.dtype() == DType::F16)
    cuda::tensor_stats(slot_of<f16>(x, ref, index), sums);
  else
    cuda::tensor_stats(slot_of<float>(x, ref, index), sums);
#else
  ND_CHECK(false, "layer statistics: this build has no CUDA");
#endif
}

void add_attention_entropy(const Tensor& qkv, int64_t NH, Tensor& out, int64_t index) {
  check_out(out, qkv, index + NH);
  ND_CHECK(qkv.ndim() == 3 && qkv.size(2) % 3 == 0, "attention entropy: qkv must be (B, T, 3C), got " << qkv.str());
  const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3;
  double* sums = out.data<double>() + index;
  if (qkv.device().is_cpu()) {
    const Tensor q = f32_on_cpu(qkv);
    cpu::attention_entropy(q.data<float>(), B, T, C, NH, sums);
    return;
  }
#if NANODIST_WITH_CUDA
  if (qkv.dtype() == DType::BF16)
    cuda::attention_entropy(qkv.data<bf16>(), B, T, C, NH, sums);
  else if (qkv.dtype() == DType::F16)
    cuda::attention_entropy(qkv.data<f16>(), B, T, C, NH, sums);
  else
    cuda::attention_entropy(qkv.data<float>(), B, T, C, NH, sums);
#else
  ND_CHECK(false, "attention entropy: this build has no CUDA");
#endif
}

StatTensorList::StatTensorList(std::vector<StatTensor> tensors) : tensors_(std::move(tensors)) {
  if (tensors_.empty() || tensors_.front().x.device().is_cpu()) return;
#if NANODIST_WITH_CUDA
  std::vector<StatSlot<float>> f32;
  std::vector<StatSlot<bf16>> bf16s;
  std::vector<StatSlot<f16>> f16s;
  for (const StatTensor& t : tensors_) {
    if (t.x.dtype() == DType::BF16)
      bf16s.push_back(slot_of<bf16>(t.x, &t.ref, t.index));
    else if (t.x.dtype() == DType::F16)
      f16s.push_back(slot_of<f16>(t.x, &t.ref, t.index));
    else
      f32.push_back(slot_of<float>(t.x, &t.ref, t.index));
  }
  const int device = tensors_.front().x.device().index;
  device_ = std::make_unique<DeviceLists>();
  device_->f32 = std::make_unique<cuda::DeviceSlots<StatSlot<float>>>(f32, device);
  device_->bf16s = std::make_unique<cuda::DeviceSlots<StatSlot<bf16>>>(bf16s, device);
  device_->f16s = std::make_unique<cuda::DeviceSlots<StatSlot<f16>>>(f16s, device);
#endif
}

StatTensorList::~StatTensorList() = default;

void StatTensorList::add_to(Tensor& out) const {
  if (tensors_.empty()) return;
  const Tensor& first = tensors_.front().x;
  for (const StatTensor& t : tensors_) check_out(out, t.x, t.index + kStatsPerSlot);
  if (first.device().is_cpu()) {
    std::vector<StatSlot<float>> slots;
    std::vector<Tensor> widened;  // f32 copies of f16 tensors, alive until the sums are taken
    widened.reserve(2 * tensors_.size());
    for (const StatTensor& t : tensors_) {
      widened.push_back(f32_on_cpu(t.x));
      widened.push_back(t.ref.defined() ? f32_on_cpu(t.ref) : Tensor());
      slots.push_back(slot_of<float>(widened[widened.size() - 2], &widened.back(), t.index));
    }
    cpu::tensor_stats(slots, out.data<double>());
    return;
  }
#if NANODIST_WITH_CUDA
  cuda::tensor_stats(*device_->f32, out.data<double>());
  cuda::tensor_stats(*device_->bf16s, out.data<double>());
  cuda::tensor_stats(*device_->f16s, out.data<double>());
#endif
}

}  // namespace nd::train
