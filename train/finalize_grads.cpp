// finalize_grads: in the order the reductions depend on each other.
#include "train/finalize_grads.h"

#include <set>
#include <string>

#include "dist/parallel/sequence_parallel.h"

namespace nd::train {

void finalize_grads(const nn::GPT& model, const dist::TensorParallel& tp, dist::DataParallelEngine& data_parallel,
                    dist::FlatParams& flat, dist::Comm* embedding) {
  data_parallel.finish_gradient_sync();
  // Both sums below are linear, so they may follow the data-parallel average, and run on what the
  // engine holds of each gradient: the whole, or under ZeRO this rank's pieces (the ranks summed
  // over hold the same pieces: dist::held_gradient).
  dist::sum_sequence_parallel_gradients(model, tp, data_parallel, flat);
  // The tied embedding (wte) is read by the first stage's lookup and the last stage's head: at
  // pp > 1 each holds a copy whose gradient is a part of the whole; their sum is the gradient.
  // Under ZeRO the copy is a segment of its own on both stages (train/zero_layout.h), so the two
  // stages' ranks of one dp rank own the same pieces of it.
  if (embedding == nullptr || embedding->size() == 1) return;
  std::set<std::string> tied;
  for (const auto& [name, info] : model.named_param_infos())
    if (info.tied) tied.insert(name);
  for (const dist::FlatEntry& e : flat.entries())
    if (tied.count(e.name))
      for (Tensor& piece : dist::held_gradient(data_parallel, flat, e))
        embedding->allreduce(piece, dist::ReduceOp::Sum);
}

}  // namespace nd::train
