// The checks of a TrainConfig as a whole (config.h validate_train_config): each flag's own range,
// then the combinations that cannot run, each an input error naming the flags.
#include "train/config.h"

#include "tensor/error.h"
#include "train/model_config.h"
#include "train/pipeline_stages.h"
#include "train/precision.h"
#include "train/step_trace.h"

namespace nd::train {

void resolve_train_config(TrainConfig& c) {
  if (c.lr_decay_iters < 0) c.lr_decay_iters = c.max_iters;
}

void validate_train_config(const TrainConfig& c, int world_size) {
  ND_CHECK_INPUT(!c.data_dir.empty(), "--data DIR is required (a directory made by nanodist prepare)");
  ND_CHECK_INPUT(!c.out_dir.empty(), "--out DIR is required");
  // The model's own rules, named as flags; the vocabulary is checked when the data is opened.
  model_config_for(c, /*vocab_size=*/1).validate(nn::GPTConfig::FieldNames::Flags);
  ND_CHECK_INPUT(c.vocab_size >= 0, "--vocab-size must be >= 0 (0 = from the data), got " << c.vocab_size);
  ND_CHECK_INPUT(c.batch_size >= 1, "--batch-size must be >= 1, got " << c.batch_size);
  ND_CHECK_INPUT(c.grad_accum >= 1, "--grad-accum must be >= 1, got " << c.grad_accum);
  ND_CHECK_INPUT(c.max_iters >= 0, "--max-iters must be >= 0, got " << c.max_iters);
  ND_CHECK_INPUT(c.lr >= 0.0 && c.min_lr >= 0.0, "--lr and --min-lr must be >= 0, got " << c.lr << " and " << c.min_lr);
  ND_CHECK_INPUT(c.warmup_iters >= 0, "--warmup-iters must be >= 0, got " << c.warmup_iters);
  ND_CHECK_INPUT(c.lr_decay_iters >= -1, "--lr-decay-iters must be >= 0 (-1 = --max-iters), got " << c.lr_decay_iters);
  ND_CHECK_INPUT(c.weight_decay >= 0.0, "--weight-decay must be >= 0, got " << c.weight_decay);
  ND_CHECK_INPUT(c.beta1 >= 0.0 && c.beta1 < 1.0, "--beta1 must be in [0, 1), got " << c.beta1);
  ND_CHECK_INPUT(c.beta2 >= 0.0 && c.beta2 < 1.0, "--beta2 must be in [0, 1), got " << c.beta2);
  ND_CHECK_INPUT(c.grad_clip >= 0.0, "--grad-clip must be >= 0 (0 = no clipping), got " << c.grad_clip);
  ND_CHECK_INPUT(c.eval_interval >= 0, "--eval-interval must be >= 0, got " << c.eval_interval);
  ND_CHECK_INPUT(c.eval_iters >= 1, "--eval-iters must be >= 1, got " << c.eval_iters);
  ND_CHECK_INPUT(c.log_interval >= 1, "--log-interval must be >= 1, got " << c.log_interval);
  Device device = parse_device(c.device);
  DType dtype = parse_dtype(c.dtype);
  ND_CHECK_INPUT(dtype == DType::F32 || dtype == DType::BF16 || dtype == DType::F16,
                 "--dtype must be f32, bf16 or fp16, got " << c.dtype);
  ND_CHECK_INPUT(dtype != DType::BF16 || device.is_cuda(), "--dtype bf16 needs --device cuda");
  precision_policy(c);  // checks --grad-dtype, --master-weights, --loss-scale and --fp8 against --dtype
  ND_CHECK_INPUT(!c.fp8 || device.is_cuda(), "--fp8 needs --device cuda");
  ND_CHECK_INPUT(c.fp8_amax_history >= 1, "--fp8-amax-history must be >= 1, got " << c.fp8_amax_history);
  ND_CHECK_INPUT(!c.fp8 || c.tp == 1, "--fp8 runs at --tp 1 only for now, got --tp " << c.tp);
  ND_CHECK_INPUT(!c.fp8 || (static_cast<int64_t>(c.batch_size) * c.block_size % 16 == 0 && c.n_embd % 16 == 0),
                 "--fp8: batch-size x block-size and n-embd must be multiples of 16 (FP8 GEMM alignment), got "
                     << c.batch_size << " x " << c.block_size << " and " << c.n_embd);
  ND_CHECK_INPUT(!device.is_cuda() || cuda_available(),
           "--device " << c.device << " but this build or machine has no CUDA GPU");
  ND_CHECK_INPUT(c.collectives == "native" || c.collectives == "ring" || c.collectives == "hierarchical" ||
                     c.collectives == "peer" || c.collectives == "auto",
                 "--collectives (or --allreduce) must be native, ring, hierarchical, peer or auto, got '"
                     << c.collectives << "'");
  ND_CHECK_INPUT(c.bucket_mb > 0.0, "--bucket-mb must be > 0, got " << c.bucket_mb);
  ND_CHECK_INPUT(c.zero >= 0 && c.zero <= 3, "--zero must be 0, 1, 2 or 3, got " << c.zero);
  ND_CHECK_INPUT(c.zero == 0 || !c.sequence_parallel || c.tp == 1,
                 "--zero " << c.zero << " with --sequence-parallel is not available yet");
  // ZeRO 2 keeps no full-size gradients: what reads them (the pipeline's tied-embedding sum, the
  // per-layer gradient statistics) waits for a port to the gradient shard.
  ND_CHECK_INPUT(c.zero < 2 || c.pp == 1, "--zero " << c.zero << " with --pp > 1 is not available yet");
  ND_CHECK_INPUT(c.zero < 2 || c.layer_stats == 0, "--zero " << c.zero << " with --layer-stats is not available yet");
  ND_CHECK_INPUT(c.zero < 3 || !c.fp8, "--zero 3 with --fp8 is not available yet");
  ND_CHECK_INPUT(c.zero < 3 || c.init_from.empty(), "--zero 3 with --init-from is not available yet");
  ND_CHECK_INPUT(c.max_seconds >= 0.0, "--max-seconds must be >= 0 (0 = no limit), got " << c.max_seconds);
  ND_CHECK_INPUT(!c.fit_schedule || c.max_seconds > 0, "--fit-schedule needs a time budget: --max-seconds > 0");
  ND_CHECK_INPUT(c.comm_timeout >= 0.0, "--comm-timeout must be >= 0 (0 = off), got " << c.comm_timeout);
  ND_CHECK_INPUT(c.heartbeat_timeout >= 0.0, "--heartbeat-timeout must be >= 0 (0 = off), got " << c.heartbeat_timeout);
  ND_CHECK_INPUT(c.layer_stats >= 0, "--layer-stats must be >= 0, got " << c.layer_stats);
  if (!c.trace.empty()) parse_trace_steps(c.trace_steps);
  ND_CHECK_INPUT(c.skip_nonfinite >= 0, "--skip-nonfinite must be >= 0, got " << c.skip_nonfinite);
  ND_CHECK_INPUT(c.ckpt_interval >= -1,
                 "--ckpt-interval must be >= -1 (-1 = at every evaluation, 0 = only at the end), got " << c.ckpt_interval);
  ND_CHECK_INPUT(c.async_save == "auto" || c.async_save == "true" || c.async_save == "false",
                 "--async-save must be true, false or auto, got '" << c.async_save << "'");
  ND_CHECK_INPUT(c.keep >= 0, "--keep must be >= 0 (0 = keep all), got " << c.keep);
  ND_CHECK_INPUT(world_size >= 1, "world size must be >= 1, got " << world_size);
  ND_CHECK_INPUT(c.tp >= 1, "--tp must be >= 1, got " << c.tp);
  ND_CHECK_INPUT(c.pp >= 1, "--pp must be >= 1, got " << c.pp);
  ND_CHECK_INPUT(c.pp_virtual >= 1, "--pp-virtual must be >= 1, got " << c.pp_virtual);
  if (c.pp > 1) validate_pipeline_config(c);
  ND_CHECK_INPUT(!c.sequence_parallel || c.block_size % c.tp == 0,
                 "--sequence-parallel: --block-size " << c.block_size << " is not divisible by --tp " << c.tp);
  ND_CHECK_INPUT(world_size % c.tp == 0, "world size " << world_size << " is not divisible by --tp " << c.tp);
  ND_CHECK_INPUT(world_size % (c.tp * c.pp) == 0,
                 "world size " << world_size << " is not divisible by --tp " << c.tp << " x --pp " << c.pp);
  ND_CHECK_INPUT(c.n_head % c.tp == 0, "--n-head " << c.n_head << " is not divisible by --tp " << c.tp);
  ND_CHECK_INPUT(c.n_embd % c.tp == 0, "--n-embd " << c.n_embd << " is not divisible by --tp " << c.tp);
}

}  // namespace nd::train
