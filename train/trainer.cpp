// The training loop. One optimizer step = local_grad_accum micro-batches (forward, backward with
// the loss scaled by 1/accum), the data-parallel gradient all-reduce hook, then AdamW with the
// scheduled lr and global-norm clipping. Evals, logging and checkpoints follow the step.
// On a GPU the step's inputs live in fixed device buffers and the step queues no host
// synchronisation, so after a few eager steps it is captured once as a CUDA graph and replayed
// (--cuda-graph; only without dropout, whose random draws change every step).
#include "train/trainer.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <ostream>

#include "data/loader.h"
#include "data/token_file.h"
#include "dist/ddp.h"
#include "nn/gpt.h"
#include "train/checkpoint_model.h"
#include "train/lr_schedule.h"
#include "train/metrics.h"
#include "train/optimizer.h"
#include "train/run_files.h"
#include "train/step_graph.h"
#include "tensor/memory_stats.h"

namespace nd::train {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Dropout and evaluation draw from their own Philox streams, apart from parameter init (0).
constexpr uint64_t kDropoutStream = 1;
constexpr uint64_t kEvalStream = 2;

// Eager steps before the capture: the first creates gradients, optimizer state and cuBLAS plans,
// later ones leave the caching allocator holding every block a step needs.
constexpr int kEagerStepsBeforeCapture = 3;

class Trainer {
 public:
  Trainer(const TrainConfig& config, const RunContext& context)
      : c_(config),
        ctx_(context),
        data_(open_run_data(config.data_dir)),
        device_(parse_device(config.device)),
        dtype_(parse_dtype(config.dtype)),
        dropout_gen_(config.seed, kDropoutStream) {
    rank_ = ctx_.comm ? ctx_.comm->rank() : 0;
    world_size_ = ctx_.comm ? ctx_.comm->size() : 1;
    validate_train_config(c_, world_size_);
    dp_ = c_.dp_size(world_size_);
    dp_rank_ = rank_ / c_.tp;
    train_loader_ = std::make_unique<BatchLoader>(data_.train, c_.batch_size, c_.block_size, dp_rank_, dp_, c_.seed);
    train_eval_ = std::make_unique<EvalReader>(data_.train, c_.batch_size, c_.block_size, dp_rank_, dp_);
    val_eval_ = std::make_unique<EvalReader>(data_.val, c_.batch_size, c_.block_size, dp_rank_, dp_);

    model_config_.n_layer = c_.n_layer;
    model_config_.n_head = c_.n_head;
    model_config_.n_embd = c_.n_embd;
    model_config_.block_size = c_.block_size;
    model_config_.vocab_size = static_cast<int>(data_.vocab_size);
    // On the GPU the logits' last dimension is padded to a multiple of 128 (50257 -> 50304) so
    // the output GEMM and the cross-entropy rows stay aligned; padding is never predicted.
    if (device_.is_cuda()) model_config_.padded_vocab_size = (model_config_.vocab_size + 127) / 128 * 128;
    model_config_.dropout = static_cast<float>(c_.dropout);
    model_config_.bias = c_.bias;
    model_config_.use_layernorm = !c_.no_layernorm;
    model_config_.use_residual = !c_.no_residual;
    Generator init_gen(c_.seed);
    model_ = std::make_unique<nn::GPT>(model_config_, init_gen, device_, dtype_);
    AdamWOptions options;
    options.beta1 = c_.beta1;
    options.beta2 = c_.beta2;
    options.weight_decay = c_.weight_decay;
    if (world_size_ > 1) {
      dist::DDPOptions ddp;
      ddp.bucket_mb = c_.bucket_mb;
      ddp.impl = dist::parse_allreduce_impl(c_.allreduce);
      ddp_ = std::make_unique<dist::DistributedDataParallel>(*ctx_.comm, model_->parameters(), ddp);
      ddp_->broadcast_parameters();
    }
    optimizer_ = std::make_unique<AdamW>(model_->named_parameters(), options);
    schedule_ = LrSchedule{c_.lr, c_.min_lr, c_.warmup_iters, c_.lr_decay_iters};
    tokens_per_step_ = static_cast<int64_t>(c_.batch_size) * c_.block_size * c_.grad_accum * dp_;

    if (is_logger()) prepare_output_dir(c_.out_dir);
    if (c_.resume) resume();
    if (is_logger()) metrics_.open(c_.out_dir + "/metrics.jsonl", /*append=*/step_ > 0);
    if (device_.is_cuda()) {
      prepare_device_step();
    } else if (c_.cuda_graph) {
      say("cuda graph: off (the device is the CPU); the step runs eagerly");
    }
  }

  TrainResult run() {
    TrainResult result;
    result.first_step = step_;
    result.params = model_->num_parameters();
    auto loop_start = Clock::now();
    bool evaluated_now = false, saved_now = false;
    while (step_ < c_.max_iters) {
      double loss = train_step(result);
      evaluated_now = saved_now = false;
      bool diverged = !std::isfinite(loss);
      bool out_of_time = c_.max_seconds > 0 && seconds_since(loop_start) >= c_.max_seconds;
      bool stop = diverged || out_of_time;
      stop = any_rank(stop);  // every rank leaves the loop at the same step
      if (stop) {
        result.diverged = diverged;
        if (diverged) say("loss is not finite at step " + std::to_string(step_) + "; stopping");
        break;
      }
      if (c_.eval_interval > 0 && step_ % c_.eval_interval == 0) {
        evaluate(result);
        evaluated_now = true;
      }
      if (c_.ckpt_interval > 0 && step_ % c_.ckpt_interval == 0) {
        save_checkpoint(result);
        saved_now = true;
      }
    }
    if (!result.diverged) {
      if (!evaluated_now) evaluate(result);
      if (!saved_now) save_checkpoint(result);
    }
    result.steps_done = step_;
    result.params_hash = parameters_hash();
    if (device_.is_cuda())
      result.peak_device_bytes = static_cast<int64_t>(device_memory_stats(device_.index).peak_bytes);
    result.best_val_loss = best_val_loss_;
    result.tokens = tokens_;
    metrics_.write_line(final_json(best_val_loss_, result.params, tokens_));
    return result;
  }

 private:
  bool is_logger() const { return rank_ == 0; }

  uint64_t parameters_hash() const {
    uint64_t h = 1469598103934665603ull;
    for (const Variable& p : model_->parameters()) {
      Tensor host = p.data().to(Device::cpu());
      const auto* bytes = static_cast<const unsigned char*>(host.raw_data());
      for (size_t i = 0; i < host.nbytes(); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
    }
    return h;
  }

  void say(const std::string& line) {
    if (is_logger() && ctx_.log) *ctx_.log << line << std::endl;
  }

  double mean_over_ranks(double v) const {
    if (world_size_ == 1) return v;
    ctx_.comm->host_allreduce(&v, 1, dist::HostReduce::Sum);
    return v / world_size_;
  }

  bool any_rank(bool flag) const {
    if (world_size_ == 1) return flag;
    int64_t v = flag ? 1 : 0;
    ctx_.comm->host_allreduce(&v, 1, dist::HostReduce::Max);
    return v != 0;
  }

  // Why a CUDA graph cannot run this job, or "" when it can.
  std::string why_no_cuda_graph() const {
    if (!c_.cuda_graph) return "--cuda-graph false";
    if (c_.dropout > 0) return "dropout " + std::to_string(c_.dropout) + " draws new random numbers every step";
    return "";
  }

  // The fixed device buffers of the GPU step: each micro-step's inputs and targets, the backward
  // seed 1/accum and one loss slot per micro-step, made before any step so that a captured graph
  // finds them at the same addresses on every replay.
  void prepare_device_step() {
    const int accum = c_.grad_accum;
    for (int micro = 0; micro < accum; ++micro) {
      inputs_.push_back(Tensor::empty({c_.batch_size, c_.block_size}, DType::I32, device_));
      targets_.push_back(Tensor::empty({c_.batch_size, c_.block_size}, DType::I32, device_));
    }
    seed_ = Tensor::full(Shape{}, 1.0 / accum, dtype_, device_);
    losses_ = Tensor::zeros({accum}, dtype_, device_);
    uploader_ = std::make_unique<PinnedUploader>(device_.index);
    graph_ = std::make_unique<StepGraph>(device_.index);
    std::string why = why_no_cuda_graph();
    use_graph_ = why.empty();
    if (!use_graph_) say("cuda graph: off (" + why + "); the step runs eagerly");
  }

  // One optimizer step; returns this rank's mean micro-batch loss.
  double train_step(TrainResult& result) {
    auto start = Clock::now();
    double lr = schedule_.at(static_cast<int>(step_));
    auto [loss, norm] = device_.is_cuda() ? device_step(lr, result) : host_step(lr);
    ++step_;
    tokens_ += tokens_per_step_;
    result.step_losses.push_back(loss);
    double seconds = seconds_since(start);

    if (step_ % c_.log_interval == 0 || step_ == 1 || step_ == c_.max_iters) {
      StepMetrics m;
      m.step = static_cast<int>(step_);
      m.max_iters = c_.max_iters;
      m.loss = mean_over_ranks(loss);
      m.lr = lr;
      m.grad_norm = norm;
      m.ms = 1000.0 * seconds;
      m.tok_per_s = static_cast<double>(tokens_per_step_) / seconds;
      m.flops_per_s = model_->flops_per_token(c_.block_size) * m.tok_per_s;
      m.mfu = ctx_.peak_flops > 0 ? m.flops_per_s / (ctx_.peak_flops * world_size_) : -1.0;
      say(format_step_line(m));
      metrics_.write_line(step_json(m));
    }
    return loss;
  }

  // The step on the CPU: (mean micro-batch loss, gradient norm).
  std::pair<double, double> host_step(double lr) {
    model_->zero_grad();
    double loss_sum = 0.0;
    const int accum = c_.grad_accum;
    for (int micro = 0; micro < accum; ++micro) {
      Batch batch = train_loader_->next_batch();
      nn::GPT::Output out = model_->forward(batch.inputs, &batch.targets, dropout_gen_);
      loss_sum += out.loss.data().item();
      // Only the last micro-step's backward communicates; the earlier ones accumulate locally.
      if (ddp_) ddp_->prepare_backward(micro == accum - 1);
      // Mean over micro-batches: each backward adds grad / accum into the gradient buffers.
      out.loss.backward(Tensor::full(out.loss.shape(), 1.0 / accum, out.loss.dtype(), device_));
    }
    if (ddp_) ddp_->finish_gradient_sync();
    double norm = optimizer_->step(lr, c_.grad_clip);
    return {loss_sum / accum, norm};
  }

  // Every id of a training batch must index the vocabulary: checked here, on the host, so the
  // device step can skip the embedding's own check (a device-to-host copy).
  void check_batch_ids(const Batch& batch) const {
    for (const Tensor* t : {&batch.inputs, &batch.targets}) {
      const int32_t* ids = t->data<int32_t>();
      for (int64_t i = 0; i < t->numel(); ++i)
        ND_CHECK(ids[i] >= 0 && ids[i] < model_config_.vocab_size,
                 "training batch: token id " << ids[i] << " at position " << i << " is outside the vocabulary of size "
                                             << model_config_.vocab_size);
    }
  }

  // The step on the GPU: the batches go into the fixed buffers and the step scalars to the
  // device (outside the graph), then the step runs eagerly, is captured, or is replayed; the loss
  // slots and the norm are read back once at the end.
  std::pair<double, double> device_step(double lr, TrainResult& result) {
    const int accum = c_.grad_accum;
    for (int micro = 0; micro < accum; ++micro) {
      Batch batch = train_loader_->next_batch();
      check_batch_ids(batch);
      uploader_->upload(2 * micro, batch.inputs, inputs_[micro]);
      uploader_->upload(2 * micro + 1, batch.targets, targets_[micro]);
    }
    optimizer_->begin_step(lr);
    const int64_t mallocs_before = device_memory_stats(device_.index).cuda_mallocs;
    const bool replayed = graph_->ready();
    if (replayed) {
      graph_->replay();
    } else if (use_graph_ && eager_device_steps_ >= kEagerStepsBeforeCapture) {
      std::string why;
      bool captured = graph_->capture([this] { enqueue_device_step(); }, &why);
      // Every rank replays or none does: a graph holds this rank's share of the collectives.
      if (any_rank(!captured)) {
        graph_ = std::make_unique<StepGraph>(device_.index);
        use_graph_ = false;
        say("cuda graph: off (capture failed: " + (captured ? std::string("on another rank") : why) +
            "); the step runs eagerly");
        enqueue_device_step();
      } else {
        say("cuda graph: captured the step after " + std::to_string(eager_device_steps_) + " eager steps (" +
            std::to_string(device_memory_stats(device_.index).cuda_mallocs - mallocs_before) +
            " cudaMalloc calls while capturing)");
        graph_->replay();
      }
    } else {
      enqueue_device_step();
      ++eager_device_steps_;
    }
    std::vector<double> losses = losses_.to_double_vector();  // waits for the step
    ops::check_recorded_token_ids(device_);
    double norm = optimizer_->last_grad_norm();
    if (replayed) {
      result.cuda_graph_replays += 1;
      result.replay_cuda_mallocs += device_memory_stats(device_.index).cuda_mallocs - mallocs_before;
    }
    double loss_sum = 0.0;
    for (double l : losses) loss_sum += l;
    return {loss_sum / accum, norm};
  }

  // Queues the whole GPU step on the compute stream without waiting for the device: zeroed
  // gradients, forward and backward of every micro-step (the loss copied into its slot), the
  // gradient all-reduce, clipping and AdamW. Capturable as it stands.
  void enqueue_device_step() {
    model_->zero_grad();
    const int accum = c_.grad_accum;
    for (int micro = 0; micro < accum; ++micro) {
      nn::GPT::Output out = model_->forward(inputs_[micro], &targets_[micro], dropout_gen_);
      Tensor slot = losses_.narrow(micro, 1).view(Shape{});
      slot.copy_from(out.loss.data());
      if (ddp_) ddp_->prepare_backward(micro == accum - 1);
      out.loss.backward(seed_);
    }
    if (ddp_) ddp_->finish_gradient_sync();
    optimizer_->enqueue_update(c_.grad_clip);
  }

  double mean_loss(const EvalReader& reader) {
    NoGradGuard no_grad;
    Generator unused(c_.seed, kEvalStream);  // dropout is off in eval; never touch the training stream
    double sum = 0.0;
    for (int k = 0; k < c_.eval_iters; ++k) {
      Batch batch = reader.batch(k);
      Tensor inputs = batch.inputs.to(device_), targets = batch.targets.to(device_);
      sum += model_->forward(inputs, &targets, unused).loss.data().item();
    }
    return mean_over_ranks(sum / c_.eval_iters);
  }

  void evaluate(TrainResult& result) {
    model_->set_training(false);
    double train_loss = mean_loss(*train_eval_);
    double val_loss = mean_loss(*val_eval_);
    model_->set_training(true);
    if (val_loss < best_val_loss_) best_val_loss_ = val_loss;
    result.last_val_loss = val_loss;
    double elapsed = seconds_since(started_);
    char line[160];
    std::snprintf(line, sizeof(line), "eval %lld | train loss %.4f | val loss %.4f | best val %.4f | %.0f s",
                  static_cast<long long>(step_), train_loss, val_loss, best_val_loss_, elapsed);
    say(line);
    metrics_.write_line(eval_json(static_cast<int>(step_), val_loss, train_loss, elapsed));
  }

  // Rank 0 writes while the others wait at a barrier afterwards, never inside a collective.
  void save_checkpoint(TrainResult& result) {
    if (is_logger()) write_checkpoint_file(result);
    if (world_size_ > 1) ctx_.comm->barrier();
  }

  void write_checkpoint_file(TrainResult& result) {
    CheckpointData data;
    data.config = config_attributes(model_config_, c_);
    store_model(*model_, optimizer_.get(), data);
    CheckpointState& s = data.state;
    s.step = step_;
    s.optimizer_step = optimizer_->step_count();
    s.dropout_seed = dropout_gen_.seed();
    s.dropout_stream = dropout_gen_.stream();
    s.dropout_offset = dropout_gen_.offset();
    s.data_step = train_loader_->step();
    s.world_size = world_size_;
    s.best_val_loss = best_val_loss_;
    s.tokens = tokens_;
    data.tokenizer_text = data_.tokenizer_text;
    std::string path = checkpoint_path(c_.out_dir, step_);
    write_checkpoint(path, data);
    prune_checkpoints(c_.out_dir, c_.keep);
    result.last_checkpoint = path;
    say("saved " + path);
  }

  void resume() {
    std::string path = newest_checkpoint(c_.out_dir);
    if (path.empty()) {
      say("--resume: no checkpoint in " + c_.out_dir + " yet; starting from scratch");
      return;
    }
    CheckpointData data = read_checkpoint(path);
    check_same_model(model_config_from_attributes(data.config, path), model_config_, path);
    ND_CHECK(data.tokenizer_text == data_.tokenizer_text,
             "tokenizer mismatch: " << path << " was trained with another tokenizer than "
                                    << c_.data_dir << "/tokenizer.txt");
    load_model(data, path, *model_, optimizer_.get());
    const CheckpointState& s = data.state;
    step_ = s.step;
    optimizer_->set_step_count(s.optimizer_step);
    dropout_gen_ = Generator(s.dropout_seed, s.dropout_stream);
    dropout_gen_.set_offset(s.dropout_offset);
    train_loader_->set_step(s.data_step);
    best_val_loss_ = s.best_val_loss;
    tokens_ = s.tokens;
    say("resumed from " + path + " at step " + std::to_string(step_));
  }

  Clock::time_point started_ = Clock::now();
  TrainConfig c_;
  RunContext ctx_;
  RunData data_;
  Device device_;
  DType dtype_;
  int rank_ = 0, world_size_ = 1, dp_ = 1, dp_rank_ = 0;
  std::unique_ptr<dist::DistributedDataParallel> ddp_;
  nn::GPTConfig model_config_;
  std::unique_ptr<nn::GPT> model_;
  std::unique_ptr<AdamW> optimizer_;
  LrSchedule schedule_;
  std::unique_ptr<BatchLoader> train_loader_;
  std::unique_ptr<EvalReader> train_eval_, val_eval_;
  Generator dropout_gen_;
  MetricsWriter metrics_;
  // The GPU step (prepare_device_step).
  std::vector<Tensor> inputs_, targets_;
  Tensor seed_, losses_;
  std::unique_ptr<PinnedUploader> uploader_;
  std::unique_ptr<StepGraph> graph_;
  bool use_graph_ = false;
  int eager_device_steps_ = 0;
  int64_t step_ = 0;
  int64_t tokens_ = 0;
  int64_t tokens_per_step_ = 0;
  double best_val_loss_ = std::numeric_limits<double>::infinity();
};

}  // namespace

TrainResult run_training(const TrainConfig& config, const RunContext& context) {
  Trainer trainer(config, context);
  return trainer.run();
}

}  // namespace nd::train
