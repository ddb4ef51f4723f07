// FlatParams: the layout, the views, and the per-step gradient bookkeeping.
#include "dist/parallel/flat_params.h"

#include <set>

#include "kernels/cpu/grad_accumulate.h"
#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/grad_accumulate.h"
#include "tensor/cuda_check.h"
#include "tensor/cuda_stream.h"
#endif

namespace nd::dist {

namespace {

int64_t aligned(int64_t offset, DType dtype) {
  const int64_t step = kFlatAlignBytes / static_cast<int64_t>(dtype_size(dtype));
  return (offset + step - 1) / step * step;
}


}  // namespace

void accumulate_into_f32(const Tensor& src, Tensor& dst, bool overwrite) {
  const int64_t n = src.numel();
  if (src.device().is_cuda()) {
#if NANODIST_WITH_CUDA
    cudaStream_t stream = compute_stream(src.device().index);
    if (src.dtype() == DType::BF16)
      cuda::grad_accumulate(src.data<bf16>(), dst.data<float>(), n, overwrite, stream);
    else if (src.dtype() == DType::F16)
      cuda::grad_accumulate(src.data<f16>(), dst.data<float>(), n, overwrite, stream);
    else
      cuda::grad_accumulate(src.data<float>(), dst.data<float>(), n, overwrite, stream);
#else
    ND_FAIL("this nanodist was built without CUDA");
#endif
  } else if (src.dtype() == DType::BF16) {
    cpu::grad_accumulate(src.data<bf16>(), dst.data<float>(), n, overwrite);
  } else if (src.dtype() == DType::F16) {
    cpu::grad_accumulate(src.data<f16>(), dst.data<float>(), n, overwrite);
  } else {
    cpu::grad_accumulate(src.data<float>(), dst.data<float>(), n, overwrite);
  }
}

void copy_in_stream_order(const Tensor& src, Tensor& dst) {
  ND_CHECK(src.dtype() == dst.dtype() && src.numel() == dst.numel() && src.device() == dst.device(),
           "copy " << src.str() << " into " << dst.str() << ": dtypes, sizes or devices differ");
  if (!src.device().is_cuda()) return dst.view({-1}).copy_from(src.view({-1}));
#if NANODIST_WITH_CUDA
  CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), src.nbytes(), cudaMemcpyDeviceToDevice,
                             compute_stream(src.device().index)));
#endif
}

FlatParams::FlatParams(const std::vector<std::pair<std::string, Variable>>& params, DType grad_dtype, int shards)
    : FlatParams(params, grad_dtype, FlatOptions{shards, {}, true}) {}

FlatParams::FlatParams(const std::vector<std::pair<std::string, Variable>>& params, DType grad_dtype,
                       const FlatOptions& options) {
  const int shards = options.shards;
  ND_CHECK(!params.empty(), "FlatParams: no parameters");
  ND_CHECK(shards >= 1, "FlatParams: " << shards << " shards");
  ND_CHECK(options.units.empty() || options.units.size() == params.size(),
           "FlatParams: " << options.units.size() << " units for " << params.size() << " parameters");
  const DType dtype = params.front().second.dtype();
  const Device device = params.front().second.device();
  std::set<std::string> names;
  for (const auto& [name, p] : params) {
    ND_CHECK(p.defined(), "FlatParams: parameter " << name << " is undefined");
    ND_CHECK(names.insert(name).second, "FlatParams: parameter " << name << " appears twice");
    ND_CHECK(p.dtype() == dtype, "FlatParams: parameter " << name << " is " << dtype_name(p.dtype())
                                                          << ", the others " << dtype_name(dtype));
    ND_CHECK(p.device() == device, "FlatParams: parameter " << name << " is on " << p.device().str()
                                                            << ", the others on " << device.str());
  }
  ND_CHECK(grad_dtype == dtype || grad_dtype == DType::F32,
           "gradients in " << dtype_name(grad_dtype) << " for " << dtype_name(dtype)
                           << " parameters (expected the parameters' dtype or f32)");
  separate_ = grad_dtype != dtype;
  // The alignment of the narrower dtype is a multiple of the wider one's, so one offset serves both.
  grad_dtype_ = grad_dtype;
  param_dtype_ = dtype;
  device_ = device;
  const int64_t unit = aligned(1, dtype) * shards;
  auto padded = [unit](int64_t n) { return (n + unit - 1) / unit * unit; };
  for (size_t k = params.size(); k-- > 0;) {
    FlatEntry e;
    e.name = params[k].first;
    e.param = params[k].second;
    e.numel = e.param.data().numel();
    const int u = options.units.empty() ? -1 : options.units[k];
    if (segments_.empty() || segments_.back().unit != u) {  // a new segment starts at a shard boundary
      if (!segments_.empty()) segments_.back().length = padded(numel_) - segments_.back().begin;
      segments_.push_back(FlatSegment{entries_.size(), entries_.size(), padded(numel_), 0, u});
      numel_ = segments_.back().begin;
    }
    e.offset = aligned(numel_, dtype);
    numel_ = e.offset + e.numel;
    entries_.push_back(std::move(e));
    segments_.back().last = entries_.size();
  }
  numel_ = padded(numel_);
  segments_.back().length = numel_ - segments_.back().begin;
  params_ = Tensor::zeros({numel_}, dtype, device);
  if (options.full_grads) grads_ = Tensor::zeros({numel_}, grad_dtype, device);
  if (separate_ && options.full_grads) backward_grads_ = Tensor::zeros({numel_}, dtype, device);
  if (separate_) accumulated_.assign(entries_.size(), 0);
  for (FlatEntry& e : entries_) {
    Tensor value = view_of(params_, e);
    value.copy_from(e.param.data());
    e.param.data() = value;
    if (!options.full_grads) {  // the data-parallel engine binds the gradients
      e.param.clear_grad();
      continue;
    }
    Tensor grad = view_of(backward_grads(), e);
    const bool had_grad = e.param.has_grad() && !e.param.autograd()->grad_stale;
    if (had_grad) grad.copy_from(e.param.grad());
    e.param.set_grad(grad);
    if (!had_grad) e.param.zero_grad();
  }
}

int64_t FlatParams::alignment() const { return aligned(1, param_dtype_); }

Tensor FlatParams::view_of(const Tensor& flat, const FlatEntry& e) const {
  return flat.narrow(e.offset, e.numel).view(e.param.shape());
}

void FlatParams::zero_grad() {
  for (FlatEntry& e : entries_) e.param.zero_grad();
  std::fill(accumulated_.begin(), accumulated_.end(), 0);
}

void FlatParams::accumulate(size_t first, size_t last, bool overwrite) {
  ND_CHECK(first <= last && last <= entries_.size(), "FlatParams::accumulate: entries [" << first << ", " << last
                                                                                         << ") of " << entries_.size());
  for (size_t k = first; k < last; ++k) entries_[k].param.grad();  // no contribution: zeros
  if (!separate_ || first == last) return;
  ND_CHECK(full_grads(), "FlatParams::accumulate without full-size gradient buffers");
  const FlatEntry &a = entries_[first], &b = entries_[last - 1];
  const int64_t begin = a.offset, length = b.offset + b.numel - begin;
  Tensor dst = grads_.narrow(begin, length);
  accumulate_into_f32(backward_grads_.narrow(begin, length), dst, overwrite);
  for (size_t k = first; k < last; ++k) {
    entries_[k].param.zero_grad();
    accumulated_[k] = 1;
  }
}

bool FlatParams::has_gradient(size_t e) const {
  if (separate_) return accumulated_.at(e) != 0;
  const Variable& p = entries_.at(e).param;
  return p.has_grad() && !p.autograd()->grad_stale;
}

}  // namespace nd::dist
