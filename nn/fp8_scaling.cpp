// The delayed-scaling bookkeeping of fp8_scaling.h.
#include "nn/fp8_scaling.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tensor/error.h"

namespace nd::nn {

double delayed_scale(double fp8_max, double amax, int margin, double previous) {
  if (!(amax > 0.0) || !std::isfinite(amax)) return previous;
  return (fp8_max / amax) / std::ldexp(1.0, margin);
}

AmaxHistory::AmaxHistory(int length) {
  ND_CHECK_INPUT(length >= 1, "the amax history must hold at least one step, got " << length);
  values_.assign(static_cast<size_t>(length), 0.0f);
}

void AmaxHistory::push(float amax) {
  values_[static_cast<size_t>(next_)] = amax;
  next_ = (next_ + 1) % length();
  count_ = std::min(count_ + 1, length());
}

float AmaxHistory::max() const { return *std::max_element(values_.begin(), values_.end()); }

std::vector<float> AmaxHistory::oldest_first() const {
  std::vector<float> out;
  for (int k = count_; k > 0; --k) out.push_back(values_[static_cast<size_t>((next_ - k + length()) % length())]);
  return out;
}

void AmaxHistory::assign_oldest_first(const std::vector<float>& values) {
  ND_CHECK(static_cast<int>(values.size()) <= length(),
           "an amax history of " << values.size() << " steps does not fit a window of " << length());
  std::fill(values_.begin(), values_.end(), 0.0f);
  next_ = count_ = 0;
  for (float v : values) push(v);
}

void AmaxHistory::restore(const std::vector<float>& values, int position) {
  ND_CHECK(static_cast<int>(values.size()) <= length() && position >= 0 && position < length(),
           "an amax history of " << values.size() << " steps ending before slot " << position
                                 << " does not fit a window of " << length());
  std::fill(values_.begin(), values_.end(), 0.0f);
  const int n = static_cast<int>(values.size());
  for (int k = 0; k < n; ++k) values_[static_cast<size_t>((position - n + k + length()) % length())] = values[static_cast<size_t>(k)];
  next_ = position;
  count_ = n;
}

DelayedScaling::DelayedScaling(const DelayedScalingOptions& options) : options_(options) {
  ND_CHECK_INPUT(options.history_length >= 1, "--fp8-amax-history must be >= 1, got " << options.history_length);
  ND_CHECK_INPUT(options.margin >= 0, "--fp8-margin must be >= 0, got " << options.margin);
}

int DelayedScaling::add(const std::string& name, Fp8Format format, bool sharded) {
  for (const Fp8TensorScaling& t : tensors_) ND_CHECK(t.name != name, "FP8 tensor " << name << " registered twice");
  tensors_.push_back(Fp8TensorScaling{name, format, sharded, AmaxHistory(options_.history_length)});
  return size() - 1;
}

int DelayedScaling::index_of(const std::string& name) const {
  for (int i = 0; i < size(); ++i)
    if (tensors_[static_cast<size_t>(i)].name == name) return i;
  ND_FAIL("no FP8 tensor named " << name);
}

void DelayedScaling::record_amax(int index, float amax) {
  Fp8TensorScaling& t = tensor(index);
  if (std::isnan(amax) || std::isnan(t.step_amax)) {
    t.step_amax = NAN;
  } else {
    t.step_amax = std::max(t.step_amax, amax);
  }
}

void DelayedScaling::reduce_step_amaxes(const MaxOverGroup& group, bool only_sharded) {
  std::vector<double> amaxes;
  for (const Fp8TensorScaling& t : tensors_)
    if (!only_sharded || t.sharded)
      amaxes.push_back(std::isnan(t.step_amax) ? std::numeric_limits<double>::infinity() : t.step_amax);
  if (amaxes.empty()) return;
  group(amaxes);
  size_t k = 0;
  for (Fp8TensorScaling& t : tensors_)
    if (!only_sharded || t.sharded) t.step_amax = static_cast<float>(amaxes[k++]);
}

void DelayedScaling::update(const MaxOverGroup& tp, const MaxOverGroup& replicas) {
  if (replicas) reduce_step_amaxes(replicas, /*only_sharded=*/false);
  if (tp) reduce_step_amaxes(tp, /*only_sharded=*/true);
  for (Fp8TensorScaling& t : tensors_) {
    if (std::isfinite(t.step_amax)) t.history.push(t.step_amax);
    t.scale = static_cast<float>(delayed_scale(fp8_max(t.format), t.history.max(), options_.margin, t.scale));
    t.step_amax = 0.0f;
  }
}

}  // namespace nd::nn
