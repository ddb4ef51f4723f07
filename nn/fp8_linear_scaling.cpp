// Fp8LinearScaling (fp8_linear_scaling.h): one device tensor of scalars, host histories.
#include "nn/fp8_linear_scaling.h"

#include "autograd/ops/fp8_linear.h"
#include "tensor/error.h"

namespace nd::nn {
namespace {

constexpr int kS = ops::kFp8LinearScalars, kR = ops::kFp8TensorScalars;

// Each quantised tensor's record (ops/fp8_linear.h) starts at scale 1, amax 0, scale_inv 1.
Tensor initial_scalars(int capacity) {
  std::vector<float> v(static_cast<size_t>(capacity) * kS, 0.0f);
  for (size_t i = 0; i < v.size(); i += kR) v[i + ops::kFp8Scale] = 1.0f, v[i + ops::kFp8ScaleInv] = 1.0f;
  return Tensor::from_vector(v, {static_cast<int64_t>(v.size())});
}

}  // namespace

Fp8LinearScaling::Fp8LinearScaling(Device device, int capacity, const DelayedScalingOptions& options)
    : capacity_(capacity), scaling_(options) {
  ND_CHECK(capacity >= 1, "Fp8LinearScaling: capacity must be >= 1, got " << capacity);
  scalars_ = initial_scalars(capacity).to(device);
}

Tensor Fp8LinearScaling::add(const std::string& name, const Fp8LinearSharding& sharding) {
  ND_CHECK(layers_ < capacity_, "Fp8LinearScaling: more than the " << capacity_ << " layers it has room for");
  scaling_.add(name + ".x", Fp8Format::E4M3, sharding.x);
  scaling_.add(name + ".w", Fp8Format::E4M3, sharding.w);
  scaling_.add(name + ".dout", Fp8Format::E5M2, sharding.dout);
  return scalars_.narrow(static_cast<int64_t>(layers_++) * kS, kS);
}

void Fp8LinearScaling::edit_scalars(const std::function<void(float* records)>& edit) {
  if (layers_ == 0) return;
  Tensor host = scalars_.to(Device::cpu());
  edit(host.data<float>());
  scalars_.copy_from(host);
}

void Fp8LinearScaling::end_step(const MaxOverGroup& tp, const MaxOverGroup& replicas) {
  edit_scalars([&](float* v) {
    for (int t = 0; t < scaling_.size(); ++t) scaling_.record_amax(t, v[kR * t + ops::kFp8Amax]);
    scaling_.update(tp, replicas);
    for (int t = 0; t < scaling_.size(); ++t) {
      v[kR * t + ops::kFp8Scale] = scaling_.tensor(t).scale;
      v[kR * t + ops::kFp8Amax] = 0.0f;
    }
  });
}

void Fp8LinearScaling::write_scales() {
  edit_scalars([&](float* v) {
    for (int t = 0; t < scaling_.size(); ++t) {
      v[kR * t + ops::kFp8Scale] = scaling_.tensor(t).scale;
      v[kR * t + ops::kFp8Amax] = 0.0f;
      v[kR * t + ops::kFp8ScaleInv] = scaling_.tensor(t).scale_inv();
    }
  });
}

void Fp8LinearScaling::drop_amaxes() {
  edit_scalars([&](float* v) {
    for (int t = 0; t < scaling_.size(); ++t) v[kR * t + ops::kFp8Amax] = 0.0f;
  });
}

}  // namespace nd::nn
