// finalize_grads: in the order the reductions depend on each other.
#include "train/finalize_grads.h"

namespace nd::train {

void finalize_grads(const nn::GPT& model, dist::DataParallel& data_parallel, dist::FlatParams& flat) {
  data_parallel.finish_gradient_sync();
  model.sum_sequence_parallel_gradients(&flat);
  // The tied embedding (wte, read by the first stage's lookup and the last stage's head) lives
  // on one stage while the pipeline has one: nothing to sum yet.
}

}  // namespace nd::train
