// Deferred weight gradients, for zero-bubble pipeline schedules (Qi et al. 2023), which split a
// stage's backward into the input gradient (on the critical path to the previous stage) and the
// weight gradients (run later, where the stage would otherwise wait). While a
// DeferWeightGradients scope is open on this thread, the ops with weight GEMMs (linear,
// linear_reduced_dx, gelu_mlp) compute their input gradient at once and queue the weight and bias
// products; WeightGradientQueue::run() performs them later, in the order they were queued, into
// the parameters' gradient slots as the plain backward would. Everything else is unchanged.
#pragma once
#include <functional>
#include <vector>

namespace nd::ops {

class WeightGradientQueue {
 public:
  void push(std::function<void()> work) { work_.push_back(std::move(work)); }
  // Runs the queued work in order and empties the queue.
  void run();
  bool empty() const { return work_.empty(); }

 private:
  std::vector<std::function<void()>> work_;
};

// The queue of the innermost open scope on this thread, or null (weight gradients run at once).
WeightGradientQueue* deferred_weight_gradients();

class DeferWeightGradients {
 public:
  explicit DeferWeightGradients(WeightGradientQueue& queue);
  ~DeferWeightGradients();
  DeferWeightGradients(const DeferWeightGradients&) = delete;
  DeferWeightGradients& operator=(const DeferWeightGradients&) = delete;

 private:
  WeightGradientQueue* previous_;
};

}  // namespace nd::ops
