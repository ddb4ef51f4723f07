// Initial parameter values, made where the parameter lives: a rank draws only the elements it owns
// of a full N(mean, std) draw, with the Philox counters the whole draw would give them, and the
// generator advances by the whole count on every rank. So any tp starts from the tp = 1 weights
// (bit for bit on one device), and nothing is staged on the host or materialised in full.
#pragma once
#include "nn/shard_spec.h"
#include "tensor/random.h"

namespace nd::nn {

// Where parameters live and which dtype they have.
struct Placement {
  Device device = Device::cpu();
  DType dtype = DType::F32;
};

// `out` (slice.size() elements, contiguous, f32, f64 or f16 on the CPU, f32, bf16 or f16 on a GPU)
// gets the elements `slice` of the N(mean, std) draw whose counters are `counters` (Generator::reserve of
// the full count): on the CPU exactly Tensor::randn's values; on a GPU, drawn by a kernel, the
// same to within float rounding of the device's logf and cosf.
void normal_fill(const Tensor& out, const ElementSlice& slice, const PhiloxCounters& counters, double mean,
                 double std);

// Rank `rank` of `tp`'s shard (shard_of's layout) of a `full_shape` N(mean, std) draw from
// `gen`: shard_of(Tensor::randn(full_shape, gen, mean, std), spec, rank, tp), placed at `at`.
Tensor normal_shard(const Shape& full_shape, double mean, double std, Generator& gen, Placement at,
                    const ShardSpec& spec = {}, int rank = 0, int tp = 1);

// A (rows, cols) tensor split by rows over tp, of which rows [0, drawn_rows) are an N(mean, std)
// draw from `gen` (drawn_rows * cols counters) and the rest zeros: rank `rank`'s rows of it. For an
// embedding padded past its vocabulary, so the padding changes neither the draw nor the model.
Tensor padded_rows_shard(int64_t rows, int64_t drawn_rows, int64_t cols, double mean, double std, Generator& gen,
                         Placement at, int rank = 0, int tp = 1);

}  // namespace nd::nn
