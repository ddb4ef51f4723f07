// finalize_grads: in the order the reductions depend on each other.
#include "train/finalize_grads.h"

namespace nd::train {

void finalize_grads(const nn::GPT& model, dist::DataParallelEngine& data_parallel, dist::FlatParams& flat,
                    dist::Comm* embedding) {
  data_parallel.finish_gradient_sync();
  model.sum_sequence_parallel_gradients(&flat);
  // The tied embedding (wte) is read by the first stage's lookup and the last stage's head: at
  // pp > 1 each holds a copy whose gradient is a part of the whole; their sum is the gradient.
  if (embedding == nullptr || embedding->size() == 1) return;
  for (const dist::FlatEntry& e : flat.entries())
    if (e.name == "transformer.wte.weight") {
      Tensor grad = flat.grad_of(e);
      embedding->allreduce(grad, dist::ReduceOp::Sum);
    }
}

}  // namespace nd::train
