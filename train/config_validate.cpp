// The checks of a TrainConfig as a whole (config.h validate_train_config): each flag's own range,
// then the combinations that cannot run, each an input error naming the flags.
#include "train/config.h"

#include <algorithm>

#include "tensor/error.h"
#include "train/model_config.h"
#include "train/pipeline_stages.h"
#include "train/precision.h"
#include "train/step_trace.h"

namespace nd::train {

void resolve_train_config(TrainConfig& c) {
  if (c.schedule.lr_decay_iters < 0) c.schedule.lr_decay_iters = c.schedule.max_iters;
}

void validate_train_config(const TrainConfig& c, int world_size) {
  ND_CHECK_INPUT(!c.data.dir.empty(), "--data DIR is required (a directory made by nanodist prepare)");
  ND_CHECK_INPUT(!c.checkpoint.out_dir.empty(), "--out DIR is required");
  // The model's own rules, named as flags; the vocabulary is checked when the data is opened.
  model_config_for(c, /*vocab_size=*/1).validate(nn::GPTConfig::FieldNames::Flags);
  ND_CHECK_INPUT(c.model.vocab_size >= 0, "--vocab-size must be >= 0 (0 = from the data), got " << c.model.vocab_size);
  ND_CHECK_INPUT(c.data.batch_size >= 1, "--batch-size must be >= 1, got " << c.data.batch_size);
  ND_CHECK_INPUT(c.data.grad_accum >= 1, "--grad-accum must be >= 1, got " << c.data.grad_accum);
  ND_CHECK_INPUT(c.schedule.max_iters >= 0, "--max-iters must be >= 0, got " << c.schedule.max_iters);
  ND_CHECK_INPUT(c.optim.lr >= 0.0 && c.optim.min_lr >= 0.0,
                 "--lr and --min-lr must be >= 0, got " << c.optim.lr << " and " << c.optim.min_lr);
  ND_CHECK_INPUT(c.schedule.warmup_iters >= 0, "--warmup-iters must be >= 0, got " << c.schedule.warmup_iters);
  ND_CHECK_INPUT(c.schedule.decay_frac >= 0.0 && c.schedule.decay_frac <= 1.0,
                 "--decay-frac must be in [0, 1], got " << c.schedule.decay_frac);
  ND_CHECK_INPUT(c.schedule.lr_decay_iters >= -1,
                 "--lr-decay-iters must be >= 0 (-1 = --max-iters), got " << c.schedule.lr_decay_iters);
  ND_CHECK_INPUT(c.optim.weight_decay >= 0.0, "--weight-decay must be >= 0, got " << c.optim.weight_decay);
  ND_CHECK_INPUT(c.optim.beta1 >= 0.0 && c.optim.beta1 < 1.0, "--beta1 must be in [0, 1), got " << c.optim.beta1);
  ND_CHECK_INPUT(c.optim.beta2 >= 0.0 && c.optim.beta2 < 1.0, "--beta2 must be in [0, 1), got " << c.optim.beta2);
  ND_CHECK_INPUT(c.optim.grad_clip >= 0.0, "--grad-clip must be >= 0 (0 = no clipping), got " << c.optim.grad_clip);
  ND_CHECK_INPUT(c.schedule.eval_interval >= 0, "--eval-interval must be >= 0, got " << c.schedule.eval_interval);
  ND_CHECK_INPUT(c.schedule.eval_iters >= 1, "--eval-iters must be >= 1, got " << c.schedule.eval_iters);
  ND_CHECK_INPUT(c.observe.log_interval >= 1, "--log-interval must be >= 1, got " << c.observe.log_interval);
  const Device device = c.parallel.device;
  const DType dtype = c.precision.dtype;
  ND_CHECK_INPUT(dtype == DType::F32 || dtype == DType::BF16 || dtype == DType::F16,
                 "--dtype must be f32, bf16 or fp16, got " << dtype_name(dtype));
  ND_CHECK_INPUT(dtype != DType::BF16 || device.is_cuda(), "--dtype bf16 needs --device cuda");
  precision_policy(c);  // checks --grad-dtype, --master-weights and --fp8 against --dtype
  ND_CHECK_INPUT(!c.precision.fp8 || device.is_cuda(), "--fp8 needs --device cuda");
  ND_CHECK_INPUT(c.precision.fp8_amax_history >= 1,
                 "--fp8-amax-history must be >= 1, got " << c.precision.fp8_amax_history);
  // Every FP8 GEMM sees a micro-batch's tokens whole (under sequence parallelism too) and a
  // tensor-parallel shard of the features: n-embd / tp (attention's c_proj), 3 n-embd / tp, 4 n-embd / tp.
  const int64_t fp8_width = 16 * static_cast<int64_t>(std::max(1, c.parallel.tp));
  ND_CHECK_INPUT(!c.precision.fp8 || (static_cast<int64_t>(c.data.batch_size) * c.model.block_size % 16 == 0 &&
                                      c.model.n_embd % fp8_width == 0),
                 "--fp8: batch-size x block-size must be a multiple of 16 and n-embd of 16 x --tp (FP8 GEMM "
                 "alignment), got " << c.data.batch_size << " x " << c.model.block_size << " and " << c.model.n_embd
                                    << " at --tp " << c.parallel.tp);
  ND_CHECK_INPUT(!device.is_cuda() || cuda_available(),
                 "--device " << device.str() << " but this build or machine has no CUDA GPU");
  ND_CHECK_INPUT(c.parallel.bucket_mb > 0.0, "--bucket-mb must be > 0, got " << c.parallel.bucket_mb);
  ND_CHECK_INPUT(c.parallel.zero >= 0 && c.parallel.zero <= 3, "--zero must be 0, 1, 2 or 3, got " << c.parallel.zero);
  ND_CHECK_INPUT(c.schedule.max_seconds >= 0.0,
                 "--max-seconds must be >= 0 (0 = no limit), got " << c.schedule.max_seconds);
  ND_CHECK_INPUT(!c.schedule.fit_schedule || c.schedule.max_seconds > 0,
                 "--fit-schedule needs a time budget: --max-seconds > 0");
  ND_CHECK_INPUT(c.parallel.comm_timeout >= 0.0,
                 "--comm-timeout must be >= 0 (0 = off), got " << c.parallel.comm_timeout);
  ND_CHECK_INPUT(c.parallel.heartbeat_timeout >= 0.0,
                 "--heartbeat-timeout must be >= 0 (0 = off), got " << c.parallel.heartbeat_timeout);
  ND_CHECK_INPUT(c.observe.layer_stats >= 0, "--layer-stats must be >= 0, got " << c.observe.layer_stats);
  if (!c.observe.trace.empty()) parse_trace_steps(c.observe.trace_steps);
  ND_CHECK_INPUT(c.parallel.ranks_per_node >= 0, "--ranks-per-node must be >= 0 (0 = the nodes MPI reports), got "
                                                     << c.parallel.ranks_per_node);
  ND_CHECK_INPUT(c.debug.skip_nonfinite >= 0, "--skip-nonfinite must be >= 0, got " << c.debug.skip_nonfinite);
  ND_CHECK_INPUT(
      c.checkpoint.interval >= -1,
      "--ckpt-interval must be >= -1 (-1 = at every evaluation, 0 = only at the end), got " << c.checkpoint.interval);
  ND_CHECK_INPUT(c.checkpoint.keep >= 0, "--keep must be >= 0 (0 = keep all), got " << c.checkpoint.keep);
  ND_CHECK_INPUT(world_size >= 1, "world size must be >= 1, got " << world_size);
  ND_CHECK_INPUT(c.parallel.tp >= 1, "--tp must be >= 1, got " << c.parallel.tp);
  ND_CHECK_INPUT(c.parallel.pp >= 1, "--pp must be >= 1, got " << c.parallel.pp);
  ND_CHECK_INPUT(c.parallel.pp_virtual >= 1, "--pp-virtual must be >= 1, got " << c.parallel.pp_virtual);
  if (c.parallel.pp > 1) validate_pipeline_config(c);
  ND_CHECK_INPUT(
      !c.parallel.sequence_parallel || c.model.block_size % c.parallel.tp == 0,
      "--sequence-parallel: --block-size " << c.model.block_size << " is not divisible by --tp " << c.parallel.tp);
  ND_CHECK_INPUT(world_size % c.parallel.tp == 0,
                 "world size " << world_size << " is not divisible by --tp " << c.parallel.tp);
  ND_CHECK_INPUT(
      world_size % (c.parallel.tp * c.parallel.pp) == 0,
      "world size " << world_size << " is not divisible by --tp " << c.parallel.tp << " x --pp " << c.parallel.pp);
  ND_CHECK_INPUT(c.model.n_head % c.parallel.tp == 0,
                 "--n-head " << c.model.n_head << " is not divisible by --tp " << c.parallel.tp);
  ND_CHECK_INPUT(c.model.n_embd % c.parallel.tp == 0,
                 "--n-embd " << c.model.n_embd << " is not divisible by --tp " << c.parallel.tp);
}

}  // namespace nd::train
