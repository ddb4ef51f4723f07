// The training step of train_step.h: one sequence of calls for the CPU and the GPU.
#include "train/train_step.h"

#include "autograd/ops.h"
#include "train/finalize_grads.h"
#include "train/unscale_grads.h"
#include "tensor/memory_stats.h"
#include "tensor/op_timer.h"

namespace nd::train {
namespace {

// Eager steps before the capture: the first creates gradients, optimizer state and cuBLAS plans,
// later ones leave the caching allocator holding every block a step needs.
constexpr int kEagerStepsBeforeCapture = 3;

// Anchors the dropout generator to the step's counter for one step, and detaches it whatever
// happens (a step that throws leaves the generator usable).
class AnchorForStep {
 public:
  AnchorForStep(Generator& gen, const uint64_t* counter) : gen_(gen) { gen_.anchor(counter); }
  ~AnchorForStep() { gen_.anchor(nullptr); }
  AnchorForStep(const AnchorForStep&) = delete;
  AnchorForStep& operator=(const AnchorForStep&) = delete;

 private:
  Generator& gen_;
};

// The generator's offset as the two i32 words of the u64 that the kernels read (little-endian).
Tensor offset_words(uint64_t offset) {
  return Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(static_cast<uint32_t>(offset)),
                                                  static_cast<int32_t>(static_cast<uint32_t>(offset >> 32))},
                             Shape{2});
}

}  // namespace

TrainStep::TrainStep(nn::GPT& model, AdamW& optimizer, dist::DataParallelEngine& data_parallel, dist::Comm* world,
                     const StepOptions& options)
    : model_(model),
      optimizer_(optimizer),
      data_parallel_(data_parallel),
      schedule_(std::make_unique<NoPipelining>()),
      world_(world),
      options_(options),
      device_(model.device()) {
  ND_CHECK(options.grad_accum >= 1, "grad_accum must be >= 1, got " << options.grad_accum);
  for (int micro = 0; micro < options.grad_accum; ++micro) {
    inputs_.push_back(Tensor::empty({options.batch_size, options.block_size}, DType::I32, device_));
    targets_.push_back(Tensor::empty({options.batch_size, options.block_size}, DType::I32, device_));
  }
  // The seed and the losses are the loss's dtype, f32 for a bf16 or f16 model too (ops::loss_dtype):
  // the logged losses are the kernels' f32 means, and 1/3 or a scale past 65504 is no f16 number.
  loss_scale_ = Tensor::full(Shape{}, 1.0 / options.grad_accum, ops::loss_dtype(model.dtype()), device_);
  loss_gradient_ = {loss_scale_, /*overwrite_logits=*/true};
  if (options.loss_scaling) inverse_loss_scale_ = Tensor::full({1}, 1.0, DType::F32, device_);
  losses_ = Tensor::zeros({options.grad_accum}, ops::loss_dtype(model.dtype()), device_);
  step_counter_ = Tensor::zeros({2}, DType::I32, device_);
  uploader_ = std::make_unique<PinnedUploader>(device_);
  if (device_.is_cuda()) graph_ = std::make_unique<StepGraph>(device_.index);
  use_graph_ = options.cuda_graph && device_.is_cuda();
}

void TrainStep::set_pipeline(std::unique_ptr<Schedule> schedule, dist::Comm* embedding) {
  schedule_ = std::move(schedule);
  embedding_ = embedding;
}

void TrainStep::load_inputs(const std::vector<Batch>& batches, const Generator& dropout_gen) {
  ND_CHECK(static_cast<int>(batches.size()) == options_.grad_accum,
           "a step takes " << options_.grad_accum << " micro-batches, got " << batches.size());
  for (int micro = 0; micro < options_.grad_accum; ++micro) {
    uploader_->upload(2 * micro, batches[micro].inputs, inputs_[micro]);
    uploader_->upload(2 * micro + 1, batches[micro].targets, targets_[micro]);
  }
  uploader_->upload(2 * options_.grad_accum, offset_words(dropout_gen.offset()), step_counter_);
}

// Queues the whole step on the model's device without waiting for it: schedule, finalize_grads,
// optimizer.
void TrainStep::enqueue(Generator& dropout_gen) {
  {
    if (op_timer::enabled()) op_timer::note_next({0.0, 0.0, "all gradients"});
    op_timer::Scope timed("zero_grad", losses_);
    optimizer_.flat().zero_grad();
  }
  MicroBatches batches{inputs_, targets_, losses_, loss_scale_, loss_gradient_};
  schedule_->run(model_, data_parallel_, batches, dropout_gen);
  finalize_grads(model_, options_.tp, data_parallel_, optimizer_.flat(), embedding_);
  // The gradients the optimizer reads: the flat buffer, or under ZeRO 2 this rank's shard.
  if (options_.loss_scaling) unscale_grads(optimizer_.flat_state().grads, inverse_loss_scale_);
  if (op_timer::enabled()) op_timer::note_next({0.0, 0.0, "clip + AdamW, all parameters"});
  op_timer::Scope timed("optimizer", losses_);
  optimizer_.enqueue_update(options_.grad_clip);
  data_parallel_.gather_parameters();  // ZeRO: every rank's updated slices to every rank
}

// Captures the step; true when every rank captured it (the graph then holds this step's work,
// not yet run). On failure anywhere, no rank uses a graph again.
bool TrainStep::capture_agreed(Generator& dropout_gen, std::string* note) {
  const int64_t mallocs_before = device_memory_stats(device_.index).cuda_mallocs;
  const uint64_t offset_before = dropout_gen.offset();
  std::string why;
  bool captured = graph_->capture([&] { enqueue(dropout_gen); }, &why);
  graph_draws_ = dropout_gen.offset() - offset_before;
  dropout_gen.set_offset(offset_before);  // the replay, or the eager step after a failure, draws them
  int64_t failed = captured ? 0 : 1;
  if (world_ && world_->size() > 1) world_->host_allreduce(&failed, 1, dist::HostReduce::Max);
  if (failed) {
    graph_ = std::make_unique<StepGraph>(device_.index);
    use_graph_ = false;
    *note = "off (capture failed: " + (captured ? std::string("on another rank") : why) + "); the step runs eagerly";
    return false;
  }
  *note = "captured the step after " + std::to_string(eager_steps_) + " eager steps (" +
          std::to_string(device_memory_stats(device_.index).cuda_mallocs - mallocs_before) +
          " cudaMalloc calls while capturing)";
  return true;
}

void TrainStep::set_loss_scale(double scale) {
  if (scale == applied_loss_scale_) return;
  ND_CHECK(options_.loss_scaling, "TrainStep: a loss scale of " << scale << " without loss scaling");
  loss_scale_.fill_(scale / options_.grad_accum);
  inverse_loss_scale_.fill_(1.0 / scale);
  applied_loss_scale_ = scale;
}

StepResult TrainStep::run(const std::vector<Batch>& batches, double lr, Generator& dropout_gen) {
  StepResult result;
  const int64_t mallocs_before = device_.is_cuda() ? device_memory_stats(device_.index).cuda_mallocs : 0;
  load_inputs(batches, dropout_gen);
  optimizer_.begin_step(lr);
  {
    AnchorForStep anchored(dropout_gen, step_counter());
    if (graph_ && graph_->ready()) {
      graph_->replay();
      dropout_gen.advance(graph_draws_);
      result.replayed = true;
    } else if (use_graph_ && eager_steps_ >= kEagerStepsBeforeCapture &&
               capture_agreed(dropout_gen, &result.graph_note)) {
      graph_->replay();
      dropout_gen.advance(graph_draws_);
    } else {
      enqueue(dropout_gen);
      ++eager_steps_;
    }
  }
  std::vector<double> losses = losses_.to_double_vector();  // the one wait for the step
  ops::check_recorded_token_ids(device_);  // a bad id a GPU kernel met in this step
  double sum = 0.0;
  for (double l : losses) sum += l;
  result.loss = sum / options_.grad_accum;
  result.grad_norm = optimizer_.finish_step();
  if (device_.is_cuda()) result.cuda_mallocs = device_memory_stats(device_.index).cuda_mallocs - mallocs_before;
  return result;
}

}  // namespace nd::train
