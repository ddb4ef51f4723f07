// sum_blocks: a 16-byte-vectorised elementwise sum of up to eight operands (a thread takes one
// 16-byte pack of each operand; a wider output, f32 from bf16, two packs), optionally added into
// the output.
#include <type_traits>

#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/sum_blocks.h"

namespace nd::cuda {
namespace {

template <typename TIn, typename TOut>
struct SumBlocksOp {
  const TIn* blocks[kSumBlocksMax];
  int count;
  TOut* out;
  float scale;
  bool accumulate;
  bool vec;
  template <int kPack>
  __device__ void pack(int64_t i) const {
    float sum[kPack], x[kPack];
    load_f32<kPack>(blocks[0] + i, sum, vec);
    for (int b = 1; b < count; ++b) {
      load_f32<kPack>(blocks[b] + i, x, vec);
#pragma unroll
      for (int k = 0; k < kPack; ++k) sum[k] += x[k];
    }
    // Explicit roundings: out + scale * sum must not become fma(scale, sum, out), whose single
    // rounding would give other bits than the host's multiply-then-add.
#pragma unroll
    for (int k = 0; k < kPack; ++k) sum[k] = __fmul_rn(sum[k], scale);
    if (accumulate) {
      load_f32<kPack>(out + i, x, vec);
#pragma unroll
      for (int k = 0; k < kPack; ++k) sum[k] = __fadd_rn(x[k], sum[k]);
    }
    store_f32<kPack>(out + i, sum, vec);
  }
};

}  // namespace

template <typename TIn, typename TOut>
void sum_blocks(const TIn* const* blocks, int count, TOut* out, int64_t n, float scale, bool accumulate,
                cudaStream_t stream) {
  ND_CHECK(count >= 1 && count <= kSumBlocksMax, "sum_blocks: 1 to " << kSumBlocksMax << " blocks, got " << count);
  ND_CHECK(n >= 0, "sum_blocks: negative size " << n);
  // A bf16 output would round the sum and then the addition: two roundings, not the one promised.
  constexpr bool kF32Out = std::is_same<TOut, float>::value;
  ND_CHECK(!accumulate || kF32Out, "sum_blocks: accumulates into f32 only");
  SumBlocksOp<TIn, TOut> op{};
  op.count = count;
  op.out = out;
  op.scale = scale;
  op.accumulate = accumulate;
  op.vec = aligned16(out);
  for (int b = 0; b < count; ++b) {
    ND_CHECK(n == 0 || blocks[b], "sum_blocks: null block " << b);
    op.blocks[b] = blocks[b];
    op.vec = op.vec && aligned16(blocks[b]);
  }
  launch_elementwise<TIn>(n, op, stream);
}

template void sum_blocks<float, float>(const float* const*, int, float*, int64_t, float, bool, cudaStream_t);
template void sum_blocks<bf16, bf16>(const bf16* const*, int, bf16*, int64_t, float, bool, cudaStream_t);
template void sum_blocks<bf16, float>(const bf16* const*, int, float*, int64_t, float, bool, cudaStream_t);

}  // namespace nd::cuda
