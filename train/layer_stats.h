// Per-layer statistics (--layer-stats N): on every Nth step, per parameter tensor the gradient
// norm, the weight norm, the update-to-weight ratio and the shares of gradient values that round
// to zero in bf16 and fp16; per block the RMS of the residual stream and of the attention and MLP
// outputs, the attention entropy of each head and the share of GELU inputs in saturation. Sums run
// on the model's device into one buffer of doubles, read back once per statistics step, summed
// over every rank (each rank adds only what it owns: under ZeRO its pieces of the gradient shard and
// of the weights the update writes, so the sums of squares and counts add up to the unsharded ones),
// and written as one JSON line.
//
// Activations come from a probe: before the step, a forward without gradients and without dropout
// over the first kProbeRows sequences of the step's first micro-batch, at the weights the step
// starts from. The step itself (and its CUDA graph) is untouched; the probe runs beside it. The
// update is the difference between the weights (f32 masters where they exist) after the step and
// a copy taken before it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dist/comm/comm.h"
#include "dist/parallel/tp_mappings.h"
#include "nn/gpt.h"
#include "train/optimizer.h"

namespace nd::train {

// Sequences of each rank's first micro-batch the probe runs (fewer when the batch is smaller;
// rounded up to a multiple of tp under sequence parallelism).
constexpr int64_t kProbeRows = 4;

struct LayerStatsRanks {
  dist::Comm* world = nullptr;  // every rank: the sums are added over it (host all-reduce)
  int dp_rank = 0;              // parameters count once: on data-parallel rank 0 (under ZeRO, in pieces on every rank)
  dist::TensorParallel tp;      // the model's tensor-parallel group (dist::parallelize's plan)
};

// Everything one statistics step measured, after the sums over the ranks (tests read it; the
// trainer writes json()). NaN where a value does not exist (a tensor without a gradient, a
// statistic the configuration cannot measure).
struct TensorStats {
  std::string name;
  double grad_norm = 0, weight_norm = 0, update_ratio = 0, grad_underflow_bf16 = 0, grad_underflow_fp16 = 0;
};
struct BlockStats {
  int layer = 0;
  double grad_norm = 0;  // over the block's tensors
  double resid_rms = 0, attn_rms = 0, mlp_rms = 0, gelu_saturated = 0;
  std::vector<double> attn_entropy;  // nats, per head (ln T_eff is the uniform row's)
};
struct LayerStatsResult {
  int64_t step = 0;
  std::vector<TensorStats> tensors;  // named_parameters() order
  std::vector<BlockStats> blocks;    // by layer
  std::string json() const;          // {"step":S,"layer_stats":{"tensors":{...},"blocks":[...]}}
};

class LayerStats : public nn::BlockObserver {
 public:
  LayerStats(nn::GPT& model, AdamW& optimizer, const LayerStatsRanks& ranks);
  ~LayerStats() override;

  // Before the step: zeroes the sums, copies the weights, runs the probe over `inputs` (B, T) i32
  // on the CPU (the step's first micro-batch). Collective over the tp group (the probe's forward).
  void before_step(const Tensor& inputs);
  // After the step (its gradients and update done): the parameter sums, one read-back, the sum
  // over the world (collective), the finished statistics.
  LayerStatsResult after_step(int64_t step);

  void on_block(const nn::BlockActivations& a) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nd::train
