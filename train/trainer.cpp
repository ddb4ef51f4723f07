// The training loop: each iteration runs one TrainStep (train_step.h: the same step on every
// device), then logs, evaluates (evaluation.h) and checkpoints (run_state.h) on their intervals.
// Every rank leaves the loop at the same step: a non-finite loss or gradient norm (beyond
// --skip-nonfinite dropped updates) or the time limit anywhere stops all of them. With a watchdog
// (RunContext) every step, eval and checkpoint is timed.
#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <ostream>

#include "data/loader.h"
#include "dist/parallel/data_parallel.h"
#include "dist/parallel/fault_guard.h"
#include "dist/comm/local_comm.h"
#include "dist/parallel/parallel_grid.h"
#include "dist/parallel/parallelize.h"
#include "nn/fp8_linear_scaling.h"
#include "nn/gpt.h"
#include "tensor/memory_stats.h"
#include "train/evaluation.h"
#include "train/ckpt/init_from.h"
#include "train/layer_stats.h"
#include "train/step_trace.h"
#include "dist/comm/tracing_comm.h"
#include "train/lr_schedule.h"
#include "train/ckpt/checkpoint.h"
#include "train/memory_plan.h"
#include "train/metrics.h"
#include "train/model_config.h"
#include "train/optimizer.h"
#include "train/run/output_dir.h"
#include "train/pipeline_plan.h"
#include "train/pipeline_setup.h"
#include "train/pipeline_timeline.h"
#include "train/precision.h"
#include "train/run/preemption.h"
#include "train/run/run_files.h"
#include "train/ckpt/run_saver.h"
#include "train/run/run_settings_file.h"
#include "train/run/stop_marker.h"
#include "train/ckpt/run_state.h"
#include "train/time_budget.h"
#include "train/train_step.h"
#include "train/zero_layout.h"

namespace nd::train {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A checkpoint write may take this long per byte beyond --comm-timeout before the ranks waiting
// for it give up: 20 MB/s, a slow network disk.
constexpr double kSlowDiskBytesPerSecond = 20e6;

// Dropout draws from its own Philox stream, apart from parameter init (stream 0).
constexpr uint64_t kDropoutStream = 1;

// --fit-schedule times this many steps after the first (which pays for set-up) of a run.
constexpr int kTimedSteps = 5;

// The op timer leaves out this many first steps of a run (set-up, cuBLAS plans, allocations).
constexpr int kOpTimerWarmupSteps = 2;

// A loss scale for a log line: 65536, 0.5, 1.048576e+06 (powers of two stay exact up to 2^33).
std::string format_scale(double scale) {
  char text[32];
  std::snprintf(text, sizeof text, "%.10g", scale);
  return text;
}

// Why a CUDA graph cannot run this job, or "" when it can.
std::string why_no_cuda_graph(const TrainConfig& c) {
  if (!c.debug.cuda_graph) return "--cuda-graph false";
  if (c.parallel.device.is_cpu()) return "the device is the CPU";
  if (c.observe.op_times) return "--op-times times the ops of eager steps";
  if (c.parallel.pp > 1 && !c.observe.pp_timeline.empty()) return "--pp-timeline records the pipeline's spans";
  if (!c.observe.trace.empty()) return "--trace records the ops of eager steps";
  return "";
}

TrainConfig resolved(TrainConfig config) {
  resolve_train_config(config);
  return config;
}

// Parameters of the whole model, not this rank's shards. The embedding's padding rows (the
// vocabulary rounded up to a multiple of tp) are left out, so the count is the same at every tp.
int64_t full_parameter_count(const nn::GPT& model) {
  int64_t n = 0;
  const auto infos = model.named_param_infos();
  const auto params = model.named_parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const nn::ParamInfo& info = infos.at(i).second;
    const Shape full = info.full_shape(params[i].second.data().shape());
    int64_t numel = 1;
    for (size_t d = 0; d < full.size(); ++d) numel *= (d == 0 && info.used_rows >= 0) ? info.used_rows : full[d];
    n += numel;
  }
  return n;
}

class Trainer {
 public:
  Trainer(const TrainConfig& config, const RunContext& context)
      : c_(resolved(config)),
        ctx_(context),
        data_(open_run_data(config.data.dir, config.model.vocab_size)),
        dropout_gen_(config.debug.seed, kDropoutStream) {
    // One process without a communicator is a world of one rank.
    if (ctx_.comm == nullptr) own_world_ = std::make_unique<dist::LocalComm>(c_.parallel.device);
    world_ = ctx_.comm ? ctx_.comm : own_world_.get();
    // A GPU communicator owns a device (its rank's, under mpirun): the model lives there too, as
    // `nanodist train` arranges. Without this, "cuda" meant cuda:0 on every rank, and a later run in
    // the same process (a test's) mixed devices: pipeline sends never completed.
    if (world_->device().is_cuda() && c_.parallel.device.is_cuda()) c_.parallel.device = world_->device();
    // The run's peak device memory is its own: an experiment (or a test) trains several runs in
    // one process, and the allocator's high-water mark would otherwise carry the largest so far.
    if (world_->device().is_cuda()) reset_peak_device_memory(world_->device().index);
    // --trace: every group the grid splits off is a TracingComm too (a track per communicator).
    if (!c_.observe.trace.empty()) {
      traced_world_ = std::make_unique<dist::TracingComm>(*world_, "world");
      world_ = traced_world_.get();
    }
    validate_train_config(c_, world_->size());
    dist::GridOptions grid;
    grid.tp = c_.parallel.tp;
    grid.pp = c_.parallel.pp;
    grid.collectives = c_.parallel.collectives;
    grid.allow_cross_node_tp = c_.parallel.allow_cross_node_tp;
    grid.ranks_per_node = c_.parallel.ranks_per_node;
    if (ctx_.peer_copy_block_bytes > 0) grid.peer.copy_block_bytes = ctx_.peer_copy_block_bytes;
    grid_ = std::make_unique<dist::ParallelGrid>(*world_, grid);
    if (ctx_.fault_guard) grid_watch_ = ctx_.fault_guard->watch_grid(*grid_);
    for (auto [comm, label] : {std::pair<dist::Comm*, const char*>{&grid_->tp(), "tp"}, {&grid_->dp(), "dp"}})
      if (auto* traced = dynamic_cast<dist::TracingComm*>(comm)) traced->set_label(label);
    rank_ = world_->rank();
    claimed_out_ = claim_output_dir_on_rank0(c_, *world_);
    for (const std::string& note : claimed_out_.notes) say(note);
    dp_ = &grid_->dp();
    // Every rank of a tensor-parallel group reads the same batch: the loader shards by dp rank.
    const int dp_rank = grid_->dp_rank(), dp_size = grid_->dp_size();
    train_loader_ = std::make_unique<BatchLoader>(data_.train, c_.data.batch_size, c_.model.block_size, dp_rank,
                                                  dp_size, c_.debug.seed);
    train_eval_ = std::make_unique<EvalReader>(data_.train, c_.data.batch_size, c_.model.block_size, dp_rank, dp_size);
    val_eval_ = std::make_unique<EvalReader>(data_.val, c_.data.batch_size, c_.model.block_size, dp_rank, dp_size);

    model_config_ = model_config_for(c_, data_.vocab_size);
    Generator init_gen(c_.debug.seed);
    // The plain model made parallel: every rank of a tp group draws the same full tensors (same
    // seed) and keeps its shard; a pipeline stage draws exactly the whole model's weights for its blocks.
    tp_ = dist::TensorParallel{&grid_->tp(), c_.parallel.sequence_parallel, c_.parallel.tp_overlap};
    model_ = dist::parallelize(model_config_, init_gen, c_.parallel.device, c_.precision.dtype,
                               dist::ParallelPlan{tp_, pipeline_stage(c_, *grid_)});
    // Parameters and gradients move into flat buffers, shared by the data-parallel engine and the
    // optimizer; the engine runs at every dp size (at one rank it only accumulates).
    precision_ = precision_policy(c_);
    if (precision_.fp8()) {  // one scaling entry per linear: four per block and the head
      nn::DelayedScalingOptions fp8_options;
      fp8_options.history_length = c_.precision.fp8_amax_history;
      fp8_scaling_ = std::make_unique<nn::Fp8LinearScaling>(model_->device(), 4 * c_.model.n_layer + 1, fp8_options);
      dist::use_fp8(*model_, *fp8_scaling_, {precision_.fp8_attn, precision_.fp8_mlp, precision_.fp8_head});
    }
    const std::vector<int> units = block_units(model_->named_param_infos(), /*tied_apart=*/grid_->pp_size() > 1);
    flat_ = std::make_shared<dist::FlatParams>(model_->named_parameters(), precision_.grad,
                                               zero_flat_options(c_.parallel.zero, dp_size, units));
    dist::DataParallelOptions dp_options;
    dp_options.bucket_mb = c_.parallel.bucket_mb;
    dp_options.zero = c_.parallel.zero;
    // Zero-bubble writes a block's weight gradients after its backward: ZeRO 2 and 3 hold them.
    dp_options.hold_units = grid_->pp_size() > 1 && c_.parallel.pp_schedule == PipelineKind::ZeroBubble;
    data_parallel_ = dist::make_data_parallel(*dp_, *flat_, dp_options);
    // FSDP: the blocks' staging (and gathers); DDP has no unit hooks.
    if (dist::UnitHooks* hooks = data_parallel_->unit_hooks()) dist::fully_shard(*model_, hooks);
    if (dp_size > 1) {
      auto watched = watch("the parameter broadcast from rank 0");
      data_parallel_->broadcast_parameters();
    }
    AdamWOptions options;
    options.beta1 = c_.optim.beta1;
    options.beta2 = c_.optim.beta2;
    options.weight_decay = c_.optim.weight_decay;
    options.master_weights = precision_.master == DType::F32;
    for (const auto& [name, info] : model_->named_param_infos()) options.decay[name] = info.decay;
    AdamWShard shard{data_parallel_->owned(), data_parallel_->shard_numel(), data_parallel_->shard_grads(), dp_,
                     data_parallel_->param_shard()};
    optimizer_ = std::make_unique<AdamW>(flat_, options, c_.parallel.zero > 0 ? &shard : nullptr);
    // The global norm sums the sharded tensors' squares over the model-parallel group (tp x pp).
    if (grid_->pp_size() > 1) {
      set_pipeline_norm(*optimizer_, *model_, *grid_);
    } else if (grid_->model_parallel().size() > 1) {
      std::vector<std::string> sharded;
      for (const auto& [name, info] : model_->named_param_infos())
        if (info.split.sharded()) sharded.push_back(name);
      optimizer_->set_tensor_parallel(&grid_->model_parallel(), sharded);
    }
    schedule_ = LrSchedule{c_.optim.lr,          c_.optim.min_lr,          c_.schedule.warmup_iters,
                           c_.schedule.lr_decay_iters, c_.schedule.lr_schedule, c_.schedule.decay_frac};
    tokens_per_step_ = static_cast<int64_t>(c_.data.batch_size) * c_.model.block_size * c_.data.grad_accum * dp_size;
    // 6 N + 12 L C T of the whole model: a stage's N summed over the pipeline.
    const double attention_flops = 12.0 * c_.model.n_layer * c_.model.n_embd * static_cast<double>(c_.model.block_size);
    const double stage_weights = model_->flops_per_token(c_.model.block_size) - attention_flops;
    flops_per_token_ = attention_flops + 6.0 * static_cast<double>(whole_model_count(
                                                   static_cast<int64_t>(stage_weights / 6.0 + 0.5), *model_, *grid_));

    // No writer under --no-checkpoint: its pinned host snapshot of the shard's parameters and AdamW
    // state would be allocated at start, before the first step.
    const bool async_save =
        !c_.checkpoint.disabled && (c_.checkpoint.async_save == AsyncSave::On ||
                                    (c_.checkpoint.async_save == AsyncSave::Auto && model_->device().is_cuda()));
    saver_ = std::make_unique<RunSaver>(*world_, dp_rank, dp_size, async_save);
    if (precision_.loss_scaling) loss_scaler_ = std::make_unique<LossScaler>(precision_.loss_scaler);
    const bool resumed = c_.checkpoint.resume && resume();
    if (!resumed && !c_.checkpoint.init_from.empty())
      say("initialized from " + load_initial_weights(c_, data_.tokenizer_text, *model_, *optimizer_, tp_) +
          " (--init-from: its weights, a fresh optimizer, step 0)");
    saver_->prepare(run_parts());
    // After the resume, whose checkpoint may not fit this model: an input error comes first.
    if (is_logger())
      say("memory: " +
          memory_plan_line(memory_plan(c_.parallel.zero, dp_size, flat_->param_dtype(), flat_->grad_dtype()),
                           c_.parallel.zero, dp_size, flat_->numel(), data_parallel_->staging_bytes()));
    if (is_logger())
      for (const std::string& line : update_run_settings_file(c_, world_->size(), resumed)) say(line);
    if (is_logger()) metrics_.open(c_.checkpoint.out_dir + "/metrics.jsonl", /*append=*/counters_.step > 0);

    StepOptions step;
    step.grad_accum = c_.data.grad_accum;
    step.grad_clip = c_.optim.grad_clip;
    step.batch_size = c_.data.batch_size;
    step.block_size = c_.model.block_size;
    std::string why = why_no_cuda_graph(c_);
    step.cuda_graph = why.empty();
    step.loss_scaling = precision_.loss_scaling;
    step.tp = tp_;
    if (!step.cuda_graph) say("cuda graph: off (" + why + "); the step runs eagerly");
    step_ = std::make_unique<TrainStep>(*model_, *optimizer_, *data_parallel_, world_, step);
    if (grid_->pp_size() > 1)
      step_->set_pipeline(make_pipeline_schedule(c_, model_config_, *model_, *grid_), &grid_->embedding());
    if (!c_.observe.trace.empty()) {
      const auto [first, last] = parse_trace_steps(c_.observe.trace_steps);
      step_trace_ = std::make_unique<StepTrace>(c_.observe.trace, first, last, *world_,
                                                model_->device().is_cuda() ? model_->device().index : -1);
    }
    if (c_.observe.layer_stats > 0)
      layer_stats_ = std::make_unique<LayerStats>(*model_, *optimizer_, LayerStatsRanks{world_, dp_rank, tp_});
    if (loss_scaler_) step_->set_loss_scale(loss_scaler_->scale());
    if (loss_scaler_ || fp8_scaling_) say("precision: " + precision_.str());
  }

  TrainResult run() {
    TrainResult result;
    result.first_step = counters_.step;
    result.params = whole_model_count(full_parameter_count(*model_), *model_, *grid_);
    announce();
    auto loop_start = Clock::now();
    loop_start_ = loop_start;
    if (c_.schedule.max_seconds > 0)
      say("time budget: " + std::to_string(static_cast<int>(c_.schedule.max_seconds)) + " s of training" +
          (c_.schedule.fit_schedule ? ", the schedule fitted to it after the first steps" : ""));
    signals_.reinstall();  // after every library's set-up (NCCL, CUDA), ours handle the signals
    bool evaluated_now = false, saved_now = false;
    while (counters_.step < c_.schedule.max_iters) {
      StepResult step;
      // Ranks with a non-finite loss, with a non-finite norm, out of time, asked to stop by a
      // signal, with their part of a pending asynchronous checkpoint written, failed: agreed by
      // all ranks.
      int64_t agreed[6] = {0, 0, 0, 0, 0, 0};
      {
        auto watched = watch("training step " + std::to_string(counters_.step + 1) +
                             " (forward, backward, gradient all-reduce, update)");
        step = train_step(result);
        agreed[0] = std::isfinite(step.loss) ? 0 : 1;
        agreed[1] = std::isfinite(step.grad_norm) ? 0 : 1;
        agreed[2] = c_.schedule.max_seconds > 0 && seconds_since(loop_start) >= c_.schedule.max_seconds ? 1 : 0;
        agreed[3] = signals_.requested() ? 1 : 0;
        agreed[4] = saver_->part_written();
        agreed[5] = saver_->part_failed();
        if (world_->size() > 1) world_->host_allreduce(agreed, 6, dist::HostReduce::Sum);
      }
      const std::string completed = saver_->complete_if_written(agreed[4], agreed[5]);
      if (!completed.empty()) saved(completed, result);
      if (c_.schedule.fit_schedule && counters_.step - result.first_step == kTimedSteps + 1)
        fit_schedule(seconds_since(loop_start));
      evaluated_now = saved_now = false;
      // A norm the loss scaler overflowed on (agreed by its own flag) is its business, not a fault.
      if (agreed[0] > 0 || (agreed[1] > 0 && !overflow_skipped_)) {
        if (!handle_nonfinite(step, agreed[0], agreed[1] > 0, result)) break;
      } else if (agreed[2] > 0) {
        break;
      }
      if (agreed[3] > 0) {  // preempted: save this step and stop, skipping the evaluation
        result.stopped_by_signal = true;
        stop_signal_ = signals_.requested() ? signal_name(signals_.signal()) : "a signal on another rank";
        say(stop_signal_ + ": saving step " + std::to_string(counters_.step) + " and stopping");
        break;
      }
      if (c_.schedule.eval_interval > 0 && counters_.step % c_.schedule.eval_interval == 0) {
        evaluate(result);
        evaluated_now = true;
      }
      const int ckpt_interval = c_.checkpoint.interval < 0 ? c_.schedule.eval_interval : c_.checkpoint.interval;
      if (ckpt_interval > 0 && counters_.step % ckpt_interval == 0) {
        save_checkpoint(result);
        saved_now = true;
      }
    }
    if (!result.diverged) {
      if (!evaluated_now && !result.stopped_by_signal) evaluate(result);
      if (!saved_now) save_checkpoint(result);
    }
    {
      auto watched = watch("the last checkpoint write", 12.0 * model_->num_parameters() / kSlowDiskBytesPerSecond);
      const std::string completed = saver_->finish();
      if (!completed.empty()) saved(completed, result);
    }
    if (result.stopped_by_signal) {
      // Saved: from here no signal may kill this rank before every rank exits with its status.
      signals_.ignore_from_now();
      // Before the barrier: once any rank exits, the marker is there for whoever reads the run. The
      // checkpoint is saved whatever happens to it, so a failed write is a line, not a failed stop.
      if (is_logger()) {
        try {
          write_stop_marker(c_.checkpoint.out_dir, counters_.step, stop_signal_);
        } catch (const Error& e) {
          say("cannot write the stop marker (the checkpoint is saved): " + e.message());
        }
      }
      if (world_->size() > 1) world_->barrier();
    }
    result.steps_done = counters_.step;
    if (ctx_.hash_parameters) {
      result.params_hash = parameters_hash(/*replicated_only=*/false);
      result.replicated_params_hash = parameters_hash(/*replicated_only=*/true);
    }
    if (model_->device().is_cuda()) {
      const DeviceMemoryStats memory = device_memory_stats(model_->device().index);
      result.peak_device_bytes = static_cast<int64_t>(memory.peak_bytes);
      result.peak_requested_device_bytes = static_cast<int64_t>(memory.peak_requested_bytes);
    }
    result.best_val_loss = counters_.best_val_loss;
    result.tokens = counters_.tokens;
    // A run stopped by a signal is not finished: no final record, so whoever reads the metrics
    // (the experiment drivers' queue, plots) sees a run still to be resumed.
    if (!result.stopped_by_signal)
      metrics_.write_line(final_json(counters_.best_val_loss, result.params, counters_.tokens));
    return result;
  }

 private:
  bool is_logger() const { return rank_ == 0; }

  // Times `what` until the returned scope ends (nothing without a watchdog).
  std::optional<dist::Watchdog::Scope> watch(const std::string& what, double extra_s = 0.0) {
    if (!ctx_.fault_guard) return std::nullopt;
    dist::Watchdog& watchdog = ctx_.fault_guard->watchdog();
    watchdog.set_step(counters_.step);
    return watchdog.watch(what, extra_s);
  }

  // A step whose loss (on `bad_loss_ranks` ranks) or gradient norm is not finite. The optimizer
  // has already dropped its update (AdamW skips a non-finite norm on every device); the run goes
  // on while --skip-nonfinite allows (true), else stops without writing these weights (false).
  bool handle_nonfinite(const StepResult& step, int64_t bad_loss_ranks, bool bad_norm, TrainResult& result) {
    const int world_size = world_->size();
    std::string what, names;
    if (bad_loss_ranks > 0) {
      what = "loss (" + std::to_string(step.loss) + " here; non-finite on " + std::to_string(bad_loss_ranks) + " of " +
             std::to_string(world_size) + " rank(s))";
      names = "loss";
    }
    if (bad_norm) {
      what += std::string(what.empty() ? "" : " and ") + "gradient norm (" + std::to_string(step.grad_norm) + ")";
      names += std::string(names.empty() ? "" : ",") + "grad_norm";
    }
    const std::string at = "step " + std::to_string(counters_.step) + ": non-finite " + what;
    if (result.skipped_nonfinite < c_.debug.skip_nonfinite) {
      result.skipped_nonfinite += 1;
      say(at + "; update dropped (" + std::to_string(result.skipped_nonfinite) + " of " +
          std::to_string(c_.debug.skip_nonfinite) + " allowed by --skip-nonfinite)");
      metrics_.write_line(nonfinite_json(names, result.skipped_nonfinite, false));
      return true;
    }
    result.diverged = true;
    say(at + "; stopping without a checkpoint of these weights" +
        (c_.debug.skip_nonfinite > 0 ? " (" + std::to_string(result.skipped_nonfinite) + " update(s) dropped before)"
                                     : ""));
    metrics_.write_line(nonfinite_json(names, result.skipped_nonfinite, true));
    return false;
  }

  std::string nonfinite_json(const std::string& names, int64_t skipped, bool stopped) const {
    return "{\"step\":" + std::to_string(counters_.step) + ",\"nonfinite\":\"" + names +
           "\",\"skipped_nonfinite\":" + std::to_string(skipped) + (stopped ? ",\"stopped\":true}" : "}");
  }

  uint64_t parameters_hash(bool replicated_only) const {
    uint64_t h = 1469598103934665603ull;
    auto infos = model_->named_param_infos();
    auto named = model_->named_parameters();
    for (size_t i = 0; i < named.size(); ++i) {
      if (replicated_only && infos.at(i).second.split.sharded()) continue;
      data_parallel_->gather_for_read(infos.at(i).second.block);  // ZeRO 3: a block's parameters exist only gathered
      Tensor host = named[i].second.data().to(Device::cpu());
      const auto* bytes = static_cast<const unsigned char*>(host.raw_data());
      for (size_t i = 0; i < host.nbytes(); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
    }
    return h;
  }

  void say(const std::string& line) {
    announce();
    if (is_logger() && ctx_.log) *ctx_.log << line << std::endl;
  }

  // RunContext::before_first_line, once.
  void announce() {
    if (announced_ || !is_logger()) return;
    announced_ = true;
    if (ctx_.before_first_line) ctx_.before_first_line();
  }

  RunParts run_parts() {
    return RunParts{c_, model_config_, *model_, tp_, *optimizer_, *train_loader_, dropout_gen_, data_.tokenizer_text,
                    world_->size(), loss_scaler_.get(), fp8_scaling_.get()};
  }

  // One optimizer step: this rank's mean micro-batch loss and the global gradient norm.
  StepResult train_step(TrainResult& result) {
    auto start = Clock::now();
    double lr = schedule_.at(static_cast<int>(counters_.step));
    std::vector<Batch> batches;
    for (int micro = 0; micro < c_.data.grad_accum; ++micro) batches.push_back(train_loader_->next_batch());
    // Every --layer-stats steps: a probe before the step, the sums after it (inside the step's time).
    const bool stats_now = layer_stats_ && (counters_.step + 1) % c_.observe.layer_stats == 0;
    if (stats_now) layer_stats_->before_step(batches.front().inputs);
    if (step_trace_) step_trace_->before_step(counters_.step + 1);
    StepResult step = step_->run(batches, lr, dropout_gen_);
    if (stats_now) metrics_.write_line(layer_stats_->after_step(counters_.step + 1).json());
    if (step_trace_)
      for (const std::string& line : step_trace_->after_step(counters_.step + 1)) say(line);
    if (!step.graph_note.empty()) say("cuda graph: " + step.graph_note);
    // This step's amaxes -> the next step's scales, agreed over the replicas (dp) and, for the
    // tensors tensor parallelism splits, over the tp group.
    if (fp8_scaling_) fp8_scaling_->end_step(dist::max_over(&grid_->tp()), dist::max_over(dp_));
    const double step_loss_scale = loss_scaler_ ? loss_scaler_->scale() : -1.0;
    overflow_skipped_ = false;
    if (loss_scaler_) {
      overflow_skipped_ = loss_scaler_->update(!std::isfinite(step.grad_norm), world_);
      step_->set_loss_scale(loss_scaler_->scale());
      result.overflow_skips = loss_scaler_->state().skipped_steps;
      result.loss_scale = loss_scaler_->scale();
      if (overflow_skipped_)
        say("step " + std::to_string(counters_.step + 1) + ": gradients overflowed at loss scale " +
            format_scale(step_loss_scale) + "; update skipped, loss scale now " + format_scale(loss_scaler_->scale()));
    }
    if (step.replayed) {
      result.cuda_graph_replays += 1;
      result.replay_cuda_mallocs += step.cuda_mallocs;
    }
    ++counters_.step;
    counters_.tokens += tokens_per_step_;
    result.step_losses.push_back(step.loss);
    double seconds = seconds_since(start);
    const int64_t run_step = counters_.step - result.first_step;
    if (run_step >= 2 && run_step <= kTimedSteps + 1) timed_seconds_ += seconds;
    if (c_.observe.op_times) {
      result.op_times = op_timer::collect();
      if (run_step <= kOpTimerWarmupSteps) {
        op_timer::reset();
        result.op_times.clear();
      } else {
        result.op_timed_steps += 1;
        result.op_timed_ms += 1000.0 * seconds;
      }
    }

    const int64_t s = counters_.step;
    if (s % c_.observe.log_interval == 0 || s == 1 || s == c_.schedule.max_iters) {
      StepMetrics m;
      m.step = static_cast<int>(s);
      m.max_iters = c_.schedule.max_iters;
      m.loss = mean_over_ranks(step.loss, dp_);
      m.lr = lr;
      m.grad_norm = step.grad_norm;
      m.ms = 1000.0 * seconds;
      m.tok_per_s = static_cast<double>(tokens_per_step_) / seconds;
      m.flops_per_s = flops_per_token_ * m.tok_per_s;
      m.mfu = ctx_.peak_flops > 0 ? m.flops_per_s / (ctx_.peak_flops * world_->size()) : -1.0;
      m.eta_s = eta_seconds(run_step);
      m.loss_scale = step_loss_scale;
      m.skipped_steps = loss_scaler_ ? loss_scaler_->state().skipped_steps : 0;
      say(format_step_line(m));
      metrics_.write_line(step_json(m));
    }
    return step;
  }

  // Time left: the mean step time of this run so far times the steps left, and never past the
  // time budget.
  double eta_seconds(int64_t run_step) const {
    if (run_step < 1) return -1.0;
    const double elapsed = seconds_since(loop_start_);
    double eta = elapsed / run_step * static_cast<double>(c_.schedule.max_iters - counters_.step);
    if (c_.schedule.max_seconds > 0) eta = std::min(eta, std::max(0.0, c_.schedule.max_seconds - elapsed));
    return eta;
  }

  // Sets the steps, warmup and decay from the timed steps so the run ends decayed on time. All
  // ranks take the slowest rank's step time, so they agree on the number of steps.
  void fit_schedule(double elapsed) {
    TimeBudgetInput in;
    in.budget_seconds = c_.schedule.max_seconds;
    in.elapsed_seconds = elapsed;
    in.steps_done = counters_.step;
    in.step_seconds = timed_seconds_ / kTimedSteps;
    world_->host_allreduce(&in.step_seconds, 1, dist::HostReduce::Max);
    in.eval_interval = c_.schedule.eval_interval;
    in.eval_iters = c_.schedule.eval_iters;
    in.grad_accum = c_.data.grad_accum;
    in.warmup_iters = c_.schedule.warmup_iters;
    FittedSchedule fitted = fit_schedule_to_time(in);
    c_.schedule.max_iters = static_cast<int>(fitted.max_iters);
    c_.schedule.lr_decay_iters = fitted.lr_decay_iters;
    c_.schedule.warmup_iters = fitted.warmup_iters;
    schedule_ = LrSchedule{c_.optim.lr,          c_.optim.min_lr,          c_.schedule.warmup_iters,
                           c_.schedule.lr_decay_iters, c_.schedule.lr_schedule, c_.schedule.decay_frac};
    char line[200];
    std::snprintf(line, sizeof(line),
                  "schedule: %.0f ms a step -> %d steps in %.0f s (warmup %d, cosine decay to step %d), "
                  "about %.0f s left",
                  1000.0 * in.step_seconds, c_.schedule.max_iters, c_.schedule.max_seconds, c_.schedule.warmup_iters,
                  c_.schedule.lr_decay_iters, c_.schedule.max_seconds - elapsed);
    say(line);
  }

  void evaluate(TrainResult& result) {
    auto watched = watch("the evaluation at step " + std::to_string(counters_.step));
    model_->set_training(false);
    op_timer::pause(true);
    double train_loss = eval_loss(*train_eval_);
    double val_loss = eval_loss(*val_eval_);
    op_timer::pause(false);
    model_->set_training(true);
    if (fp8_scaling_) fp8_scaling_->drop_amaxes();  // the evaluation's are not the next step's
    if (val_loss < counters_.best_val_loss) counters_.best_val_loss = val_loss;
    result.last_val_loss = val_loss;
    double elapsed = seconds_since(started_);
    char line[160];
    std::snprintf(line, sizeof(line), "eval %lld | train loss %.4f | val loss %.4f | best val %s | %.0f s",
                  static_cast<long long>(counters_.step), train_loss, val_loss,
                  format_loss(counters_.best_val_loss).c_str(), elapsed);
    say(line);
    metrics_.write_line(eval_json(static_cast<int>(counters_.step), val_loss, train_loss, elapsed));
  }

  // Through the pipeline's stages at pp > 1; the mean over the data-parallel replicas.
  double eval_loss(const EvalReader& reader) {
    if (grid_->pp_size() == 1) return mean_eval_loss(*model_, reader, c_.schedule.eval_iters, dp_);
    return mean_over_ranks(pipeline_eval(c_, *model_, reader, *grid_), dp_);
  }

  // Every rank writes the slices it owns (checkpoint_slices.h), in parallel, then rank 0 the
  // index. Synchronous: the watchdog gives the write (the previous asynchronous one's end
  // included) time for the whole checkpoint on a slow disk on top of --comm-timeout.
  // Asynchronous: this only takes the snapshot; the loop completes the save when every part is in.
  void save_checkpoint(TrainResult& result) {
    if (c_.checkpoint.disabled) return;
    const double bytes = 12.0 * static_cast<double>(model_->num_parameters());  // params, m, v in f32
    auto watched = watch("the checkpoint at step " + std::to_string(counters_.step) + " (" +
                             std::to_string(static_cast<int64_t>(bytes / 1e6)) + " MB over all ranks)",
                         2.0 * bytes / kSlowDiskBytesPerSecond);
    const std::string completed = saver_->save(run_parts(), counters_);
    if (!completed.empty()) saved(completed, result);
  }

  void saved(const std::string& path, TrainResult& result) {
    result.last_checkpoint = path;
    say("saved " + path + " (" + saver_->last_summary() + ")");
  }

  // True when a checkpoint in --out was loaded.
  bool resume() {
    RunParts parts = run_parts();
    std::vector<std::string> skipped;
    std::vector<std::string> fp8_notes;  // the FP8 scaling state: restored, missing or ignored
    std::string path = resume_run(parts, counters_, *world_, skipped, &fp8_notes);
    for (const std::string& line : skipped) say(line);
    if (path.empty()) {
      say("--resume: no checkpoint in " + c_.checkpoint.out_dir + " yet; starting from scratch");
      return false;
    }
    saver_->set_saved_step(counters_.step);
    say("resumed from " + path + " at step " + std::to_string(counters_.step));
    for (const std::string& line : fp8_notes) say(line);
    return true;
  }

  Clock::time_point started_ = Clock::now();
  TrainConfig c_;
  ClaimedOutputDir claimed_out_;  // rank 0 holds --out's lock for the whole run
  RunContext ctx_;
  RunData data_;
  std::unique_ptr<dist::Comm> own_world_;  // when the context has no communicator
  std::unique_ptr<dist::TracingComm> traced_world_;  // --trace: wraps the world
  dist::Comm* world_ = nullptr;
  std::unique_ptr<dist::ParallelGrid> grid_;
  dist::CommWatch grid_watch_;  // the fault guard watches grid_'s comms; ends before grid_ does
  dist::Comm* dp_ = nullptr;  // grid_->dp(): gradients, loss means and data shards
  int rank_ = 0;
  PrecisionPolicy precision_;
  std::shared_ptr<dist::FlatParams> flat_;
  std::unique_ptr<dist::DataParallelEngine> data_parallel_;
  nn::GPTConfig model_config_;
  dist::TensorParallel tp_;  // the model's tensor-parallel group (parallelize's plan)
  std::unique_ptr<nn::GPT> model_;
  std::unique_ptr<AdamW> optimizer_;
  std::unique_ptr<TrainStep> step_;
  std::unique_ptr<LayerStats> layer_stats_;            // --layer-stats
  std::unique_ptr<LossScaler> loss_scaler_;            // loss scaling only (train/loss_scaler.h)
  std::unique_ptr<nn::Fp8LinearScaling> fp8_scaling_;  // --fp8 only
  bool announced_ = false;                             // before_first_line has been called
  std::string stop_signal_;                            // what stopped the run ("SIGTERM"), for the marker
  bool overflow_skipped_ = false;                      // the last step was skipped by the loss scaler
  std::unique_ptr<StepTrace> step_trace_;              // --trace
  LrSchedule schedule_;
  std::unique_ptr<BatchLoader> train_loader_;
  std::unique_ptr<EvalReader> train_eval_, val_eval_;
  Generator dropout_gen_;
  MetricsWriter metrics_;
  RunCounters counters_;
  PreemptionSignals signals_;  // from construction on, a signal stops the run at a step boundary
  std::unique_ptr<RunSaver> saver_;
  int64_t tokens_per_step_ = 0;
  double flops_per_token_ = 0.0;  // the whole model's, for the step line's FLOP/s and MFU
  double timed_seconds_ = 0.0;
  Clock::time_point loop_start_ = Clock::now();  // steps 2..kTimedSteps+1 of this run, for --fit-schedule
};

}  // namespace

TrainResult run_training(const TrainConfig& config, const RunContext& context) {
  // --op-times: the op timer keeps its totals for this run only.
  struct OpTable {
    explicit OpTable(bool on) : on(on) {
      if (on) op_timer::reset();
      op_timer::set_table(on);
    }
    ~OpTable() {
      if (on) op_timer::set_table(false);
    }
    bool on;
  } table(config.observe.op_times);
  Trainer trainer(config, context);
  return trainer.run();
}

}  // namespace nd::train
