// Evaluation losses and the small host-side reductions the training loop agrees on.
#include "train/evaluation.h"

#include "autograd/variable.h"

namespace nd::train {

double mean_over_ranks(double value, dist::Comm* comm) {
  if (comm == nullptr || comm->size() == 1) return value;
  comm->host_allreduce(&value, 1, dist::HostReduce::Sum);
  return value / comm->size();
}

double mean_eval_loss(const nn::GPT& model, const EvalReader& reader, int iters, dist::Comm* dp) {
  NoGradGuard no_grad;
  // Dropout is off in eval mode, so this generator is never drawn from; a local one keeps the
  // training stream untouched in any case.
  Generator unused(0, 0);
  double sum = 0.0;
  for (int k = 0; k < iters; ++k) {
    Batch batch = reader.batch(k);
    Tensor inputs = batch.inputs.to(model.device()), targets = batch.targets.to(model.device());
    sum += model.forward(inputs, &targets, unused).loss.data().item();
  }
  return mean_over_ranks(sum / iters, dp);
}

}  // namespace nd::train
