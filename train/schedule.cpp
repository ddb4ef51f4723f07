// NoPipelining: the micro-batches one after another.
#include "train/schedule.h"

#include "tensor/op_timer.h"

namespace nd::train {

void NoPipelining::run(nn::GPT& model, dist::DataParallelEngine& data_parallel, MicroBatches& batches,
                       Generator& dropout_gen) {
  const int count = static_cast<int>(batches.inputs.size());
  for (int micro = 0; micro < count; ++micro) {
    nn::GPT::Output out =
        model.forward(batches.inputs[micro], &batches.targets[micro], dropout_gen, &batches.loss_gradient);
    batches.losses.narrow(micro, 1).view(Shape{}).copy_from(out.loss.data());
    data_parallel.prepare_backward(micro == 0, micro == count - 1);
    out.loss.backward(batches.loss_scale);
  }
}

}  // namespace nd::train
