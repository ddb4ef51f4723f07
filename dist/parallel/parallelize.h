// parallelize: the one place that turns the plain model (nn/gpt.h, which knows no parallelism) into
// this rank's part of the parallel one, torchtitan's pattern. The plan's tensor parallelism picks
// the layers (column/row-parallel linears, the vocabulary-parallel embedding and loss, and under
// sequence parallelism the token-share dropout: TensorParallelLayers), its pipeline stage the
// blocks this rank builds; use_fp8 runs chosen linears in FP8, fully_shard hands each block to a
// sharded data-parallel engine. Every rank draws the weights of the whole model from the same seed
// and keeps its part, so any plan starts from the same model.
#pragma once
#include <memory>

#include "dist/comm/comm.h"
#include "dist/parallel/tp_mappings.h"
#include "dist/parallel/unit_hooks.h"
#include "nn/fp8_linear_scaling.h"
#include "nn/gpt.h"

namespace nd::dist {

struct ParallelPlan {
  TensorParallel tp;   // tensor (and sequence) parallelism; one rank: the plain layers
  nn::GPTStage stage;  // pipeline parallelism: the blocks, and the ends, this rank holds
};

// This rank's part of the model under `plan`. tp must divide n_head, n_embd and the vocabulary rows
// (see nn::padded_vocab_rows); an nd::Error names the numbers otherwise.
std::unique_ptr<nn::GPT> parallelize(const nn::GPTConfig& config, Generator& init_gen, Device device, DType dtype,
                                     const ParallelPlan& plan);

// Which linears run their GEMMs in FP8.
struct Fp8Linears {
  bool attn = true;   // each block's c_attn and attention c_proj
  bool mlp = true;    // each block's c_fc and MLP c_proj
  bool head = false;  // the tied head
};
// FP8 GEMMs (ops::fp8_linear: bf16 on a GPU with FP8 tensor cores) on the chosen linears of
// `model`, registered with `scaling` in block order under their module names
// (transformer.h.3.mlp.c_fc), the head last as lm_head. A tensor-parallel layer's split tensors
// (nn::Fp8LinearSharding: column-parallel w and the output's gradient, row-parallel x and w) are
// registered as sharded, so that their amaxes are agreed over the tp group
// (Fp8LinearScaling::end_step with max_over(tp)) and every rank quantises with the one scale of
// the whole tensor, the scale of the tp = 1 run.
void use_fp8(nn::GPT& model, nn::Fp8LinearScaling& scaling, const Fp8Linears& linears);

// A sharded data-parallel engine (ZeRO 2 and 3) takes the model's blocks as its units: it is
// called around each block's forward and before its backward (nn::BlockHooks), the unit being the
// block's index (nn::ParamInfo::block of its parameters). nullptr: none.
void fully_shard(nn::GPT& model, UnitHooks* engine);

// The max over `group` for FP8's amax agreement (nn::MaxOverGroup); empty for null or one rank.
nn::MaxOverGroup max_over(Comm* group);

}  // namespace nd::dist
