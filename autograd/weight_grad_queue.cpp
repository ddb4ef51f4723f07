// The thread's deferral scope of weight_grad_queue.h.
#include "autograd/weight_grad_queue.h"

namespace nd::ops {
namespace {
thread_local WeightGradientQueue* active = nullptr;
}  // namespace

void WeightGradientQueue::run() {
  std::vector<std::function<void()>> work;
  work.swap(work_);
  for (auto& w : work) w();
}

WeightGradientQueue* deferred_weight_gradients() { return active; }

DeferWeightGradients::DeferWeightGradients(WeightGradientQueue& queue) : previous_(active) { active = &queue; }

DeferWeightGradients::~DeferWeightGradients() { active = previous_; }

}  // namespace nd::ops
