// Delayed scaling for FP8 GEMMs (Transformer Engine's recipe): every tensor quantised to FP8 keeps
// a history of its amax (largest magnitude) over the last steps, 1024 by default; the scale it is
// multiplied by before the cast is (fp8 max / the history's max) / 2^margin, so the largest value
// seen lately lands just inside the format. A step quantises with the scale of the steps before it
// and records its own amax, which joins the history when the step ends. Tensors sharded over the
// tensor-parallel group agree on one amax (max over the group) so every shard uses one scale.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "kernels/fp8_format.h"

namespace nd::nn {

struct DelayedScalingOptions {
  int history_length = 1024;
  int margin = 0;  // a power of two of headroom below the format's max
};

// Replaces each value by its max over a group of ranks, the same on every rank after (the caller's
// communicator: dist::max_over); empty for a group of one rank.
using MaxOverGroup = std::function<void(std::vector<double>& values)>;

// (fp8_max / amax) / 2^margin; `previous` when amax is zero or not finite (nothing to scale by).
double delayed_scale(double fp8_max, double amax, int margin, double previous);

// The last `length` amaxes, a ring: push writes over the oldest.
class AmaxHistory {
 public:
  explicit AmaxHistory(int length);
  void push(float amax);
  float max() const;  // 0 while empty
  int length() const { return static_cast<int>(values_.size()); }
  int count() const { return count_; }  // amaxes pushed so far, at most length
  int position() const { return next_; }  // the slot the next push writes
  std::vector<float> oldest_first() const;             // count() values
  void assign_oldest_first(const std::vector<float>& values);  // nd::Error when longer than length
  // The ring as it was (a checkpoint's): `values` oldest first, the newest in the slot before
  // `position`. nd::Error when they do not fit or `position` is outside the ring.
  void restore(const std::vector<float>& values, int position);

 private:
  std::vector<float> values_;
  int next_ = 0;   // the slot the next push writes
  int count_ = 0;
};

// One quantised tensor: its format (E4M3 for activations and weights, E5M2 for gradients), whether
// tensor parallelism shards it, its history and the scale the next step quantises with.
struct Fp8TensorScaling {
  std::string name;
  Fp8Format format = Fp8Format::E4M3;
  bool sharded = false;
  AmaxHistory history;
  float scale = 1.0f;
  float step_amax = 0.0f;  // recorded by this step's quantise

  float scale_inv() const { return 1.0f / scale; }
};

class DelayedScaling {
 public:
  explicit DelayedScaling(const DelayedScalingOptions& options = DelayedScalingOptions{});

  // Registers a tensor; returns its index. nd::Error on a name registered twice.
  int add(const std::string& name, Fp8Format format, bool sharded);
  int size() const { return static_cast<int>(tensors_.size()); }
  Fp8TensorScaling& tensor(int index) { return tensors_.at(static_cast<size_t>(index)); }
  const Fp8TensorScaling& tensor(int index) const { return tensors_.at(static_cast<size_t>(index)); }
  int index_of(const std::string& name) const;  // nd::Error on an unknown name

  // This step's amax of tensor `index` (the quantise kernel's; the max is kept if recorded twice).
  void record_amax(int index, float amax);

  // Ends the step: every tensor's amax is reduced (max) over `replicas` (the data-parallel group:
  // the replicas quantise with one scale, so their histories are one, and a checkpoint's one copy
  // resumes every rank) and the sharded tensors' over `tp`, one reduction each (empty: none);
  // every finite amax joins its history, and the scales are recomputed.
  // A non-finite amax (an overflowing step, skipped by the optimizer) is left out of the history,
  // so it cannot freeze the scale for a whole window.
  void update(const MaxOverGroup& tp, const MaxOverGroup& replicas = nullptr);

  const DelayedScalingOptions& options() const { return options_; }

 private:
  // The step amaxes of every tensor (or only the tp-sharded ones) replaced by their max over
  // `group`'s ranks; a NaN counts as inf there, so the max is defined and agreed.
  void reduce_step_amaxes(const MaxOverGroup& group, bool only_sharded);

  DelayedScalingOptions options_;
  std::vector<Fp8TensorScaling> tensors_;
};

}  // namespace nd::nn
