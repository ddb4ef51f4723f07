// BatchLoader and EvalReader: both fill (B, T) windows; they differ only in where rows start.
#include "data/loader.h"

#include "tensor/error.h"
#include "tensor/philox.h"

namespace nd {
namespace {

void check_loader_args(const TokenSource& tokens, int64_t batch, int64_t block, int rank, int world_size) {
  ND_CHECK(batch > 0, tokens.name() << ": batch size " << batch << " must be positive");
  ND_CHECK(block > 0, tokens.name() << ": block size " << block << " must be positive");
  ND_CHECK(world_size > 0 && rank >= 0 && rank < world_size,
           "rank " << rank << " is outside a world of size " << world_size);
  // Every shard, not just the whole stream: a shard too short for one window is a broken file.
  for (const TokenShard& s : tokens.shards())
    ND_CHECK_INPUT(s.count >= block + 1, s.name << " has " << s.count << " tokens, fewer than block size " << block
                                          << " + 1 = " << block + 1 << " needed for one window; use a smaller --block-size or more data");
}

// Row b of the batch reads tokens [start_of(b), start_of(b) + T + 1).
template <typename StartOf>
Batch fill_batch(const TokenSource& tokens, int64_t batch, int64_t block, StartOf start_of) {
  Batch out{Tensor::empty({batch, block}, DType::I32), Tensor::empty({batch, block}, DType::I32)};
  int32_t* inputs = out.inputs.data<int32_t>();
  int32_t* targets = out.targets.data<int32_t>();
  for (int64_t b = 0; b < batch; ++b) {
    int64_t start = start_of(b);
    tokens.copy(start, block, inputs + b * block);
    tokens.copy(start + 1, block, targets + b * block);
  }
  return out;
}

}  // namespace

BatchLoader::BatchLoader(std::shared_ptr<const TokenSource> tokens, int64_t batch_per_rank, int64_t block_size,
                         int rank, int world_size, uint64_t seed)
    : tokens_(std::move(tokens)), batch_(batch_per_rank), block_(block_size), rank_(rank),
      world_size_(world_size), seed_(seed) {
  ND_CHECK(tokens_ != nullptr, "BatchLoader needs a token stream");
  check_loader_args(*tokens_, batch_, block_, rank_, world_size_);
}

int64_t BatchLoader::offset_of(uint64_t step, int64_t row) const {
  uint64_t choices = static_cast<uint64_t>(tokens_->size() - block_);  // offsets 0 .. n - T - 1
  uint64_t counter = step * static_cast<uint64_t>(global_batch()) + static_cast<uint64_t>(row);
  Philox4 r = philox4x32(seed_, counter, 0);
  uint64_t bits = (static_cast<uint64_t>(r.v[0]) << 32) | r.v[1];
  return static_cast<int64_t>(bits % choices);  // bias < choices / 2^64: negligible
}

Batch BatchLoader::batch_at(uint64_t step) const {
  int64_t first_row = static_cast<int64_t>(rank_) * batch_;
  return fill_batch(*tokens_, batch_, block_, [&](int64_t b) { return offset_of(step, first_row + b); });
}

Batch BatchLoader::next_batch() { return batch_at(step_++); }

EvalReader::EvalReader(std::shared_ptr<const TokenSource> tokens, int64_t batch_per_rank, int64_t block_size, int rank,
                       int world_size)
    : tokens_(std::move(tokens)), batch_(batch_per_rank), block_(block_size), rank_(rank), world_size_(world_size) {
  ND_CHECK(tokens_ != nullptr, "EvalReader needs a token stream");
  check_loader_args(*tokens_, batch_, block_, rank_, world_size_);
  num_windows_ = (tokens_->size() - 1) / block_;
}

Batch EvalReader::batch(int64_t index) const {
  ND_CHECK(index >= 0, "eval batch index " << index << " must be non-negative");
  int64_t first_row = index * batch_ * world_size_ + static_cast<int64_t>(rank_) * batch_;
  return fill_batch(*tokens_, batch_, block_,
                    [&](int64_t b) { return ((first_row + b) % num_windows_) * block_; });
}

}  // namespace nd
