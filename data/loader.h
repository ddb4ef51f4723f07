// Batches of (inputs, targets) from a token stream for training and evaluation.
//
// Training (BatchLoader): the global batch of step s has G = batch_per_rank * world_size rows;
// row i starts at a random offset drawn from Philox with key = seed and counter = (s*G + i),
// uniform over [0, n - T - 1]. Rank r keeps rows [r*B, (r+1)*B) with B = batch_per_rank. The
// offsets of a step therefore depend only on (seed, s, i), never on the rank or world size,
// so N ranks with batch B/N together read exactly the rows one rank with batch B reads: DDP
// on N ranks sees the same global batch as one rank. The whole state is the step counter.
//
// Evaluation (EvalReader): consecutive, non-overlapping windows; batch k, global row i reads
// window (k*G + i) mod W (W = floor((n - 1) / T) windows), so the same rows are read every
// time, and sharding by rank follows the same rule as training.
#pragma once
#include <cstdint>
#include <memory>

#include "data/token_file.h"
#include "data/token_source.h"
#include "tensor/tensor.h"

namespace nd {

struct Batch {
  Tensor inputs;   // i32 (B, T) on the CPU
  Tensor targets;  // i32 (B, T): targets[b][t] = the token after inputs[b][t]
};

class BatchLoader {
 public:
  // nd::Error when a shard of the data has fewer than T + 1 tokens, or B, T, rank, world_size
  // are invalid. A window may span two shards (like a document boundary inside one).
  BatchLoader(std::shared_ptr<const TokenSource> tokens, int64_t batch_per_rank, int64_t block_size, int rank,
              int world_size, uint64_t seed);
  BatchLoader(std::shared_ptr<const TokenFile> tokens, int64_t batch_per_rank, int64_t block_size, int rank,
              int world_size, uint64_t seed)
      : BatchLoader(TokenSource::of(std::move(tokens)), batch_per_rank, block_size, rank, world_size, seed) {}

  Batch next_batch();  // the batch of step `step()`, then advances the step
  Batch batch_at(uint64_t step) const;  // random access, no state change

  // The complete loader state: save step(), later set_step(saved) and next_batch() continues
  // exactly as the uninterrupted run would.
  uint64_t step() const { return step_; }
  void set_step(uint64_t step) { step_ = step; }

  int64_t batch_per_rank() const { return batch_; }
  int64_t block_size() const { return block_; }
  int64_t global_batch() const { return batch_ * world_size_; }
  const TokenSource& tokens() const { return *tokens_; }
  // Offset of global row `row` of step `step`: what every rank agrees on. In [0, n - T - 1].
  int64_t offset_of(uint64_t step, int64_t row) const;

 private:
  std::shared_ptr<const TokenSource> tokens_;
  int64_t batch_, block_;
  int rank_, world_size_;
  uint64_t seed_;
  uint64_t step_ = 0;
};

class EvalReader {
 public:
  // nd::Error when a shard of the data has fewer than T + 1 tokens or the arguments are invalid.
  EvalReader(std::shared_ptr<const TokenSource> tokens, int64_t batch_per_rank, int64_t block_size, int rank = 0,
             int world_size = 1);
  EvalReader(std::shared_ptr<const TokenFile> tokens, int64_t batch_per_rank, int64_t block_size, int rank = 0,
             int world_size = 1)
      : EvalReader(TokenSource::of(std::move(tokens)), batch_per_rank, block_size, rank, world_size) {}

  Batch batch(int64_t index) const;  // deterministic: the same index gives the same rows
  int64_t num_windows() const { return num_windows_; }

 private:
  std::shared_ptr<const TokenSource> tokens_;
  int64_t batch_, block_;
  int rank_, world_size_;
  int64_t num_windows_;
};

}  // namespace nd
