// Drawing initial values into the slice a rank owns, on its device (nn/init.h): the kernels of
// kernels/{cpu,cuda}/random_fill, bound to the tensor's device and dtype by ND_DISPATCH_KERNEL.
#include "nn/init.h"

#include <algorithm>

#include "autograd/dispatch.h"
#include "kernels/cpu/random_fill.h"
#include "kernels/cuda/random_fill.h"

namespace nd::nn {

void normal_fill(const Tensor& out, const ElementSlice& slice, const PhiloxCounters& counters, double mean,
                 double std) {
  ND_CHECK(out.numel() == slice.size(),
           "normal_fill: " << out.str() << " cannot hold a slice of " << slice.size() << " elements");
  if (out.numel() == 0) return;
  ND_DISPATCH_KERNEL(out, "normal_fill",
                     backend::normal_fill(out.data<scalar_t>(), slice, counters, mean, std));
}

Tensor normal_shard(const Shape& full_shape, double mean, double std, Generator& gen, Placement at,
                    const ShardSpec& spec, int rank, int tp) {
  const ElementSlice slice = shard_elements(full_shape, spec, rank, tp);
  const PhiloxCounters counters = gen.reserve(static_cast<uint64_t>(shape_numel(full_shape)));
  Tensor out = Tensor::empty(shard_shape(full_shape, spec, tp), at.dtype, at.device);
  normal_fill(out, slice, counters, mean, std);
  return out;
}

Tensor padded_rows_shard(int64_t rows, int64_t drawn_rows, int64_t cols, double mean, double std, Generator& gen,
                         Placement at, int rank, int tp) {
  ND_CHECK(drawn_rows >= 0 && drawn_rows <= rows && cols >= 0 && rank >= 0 && rank < tp,
           "padded_rows_shard: " << drawn_rows << " drawn rows of " << rows << " x " << cols << ", rank " << rank
                                 << " of " << tp);
  const Shape shard = shard_shape({rows, cols}, ShardSpec{0, 1}, tp);
  const int64_t first_row = rank * shard[0];
  const int64_t drawn = std::clamp<int64_t>(drawn_rows - first_row, 0, shard[0]);  // of this rank's rows
  const PhiloxCounters counters = gen.reserve(static_cast<uint64_t>(drawn_rows * cols));
  Tensor out = Tensor::empty(shard, at.dtype, at.device);
  ElementSlice slice = ElementSlice::whole(drawn * cols);
  slice.offset = first_row * cols;
  normal_fill(out.narrow(0, drawn), slice, counters, mean, std);
  out.narrow(drawn, shard[0] - drawn).zero_();
  return out;
}

}  // namespace nd::nn
