// The pipeline runtime of pipeline_schedule.h: the plan's program for this rank, run action by
// action, with the plan's groups of transfers between them.
#include "train/pipeline_schedule.h"

#include <algorithm>
#include <optional>

#include "autograd/variable.h"
#include "autograd/weight_grad_queue.h"
#include "tensor/op_timer.h"
#include "train/pipeline_simulator.h"

namespace nd::train {

DropoutDraws dropout_draws(const nn::GPTConfig& c, int batch_size, int block_size) {
  if (c.dropout <= 0.0f) return {};
  const uint64_t B = batch_size, T = block_size, C = c.n_embd, H = c.n_head;
  // The embedding's dropout; in a block the attention probabilities' (B H T T) and the two
  // residual branches' (B T C each). Under tensor or sequence parallelism each draws the whole
  // tensor's counters (dist/parallel/sequence_parallel.h), so the counts do not depend on tp.
  return {B * T * C, B * H * T * T + 2 * B * T * C};
}

std::vector<int> local_chunk_starts(const PipelineOptions& o, int rank) {
  std::vector<int> starts{0};
  for (int c = 0; c < o.shape.virtual_; ++c) {
    const int g = o.shape.global_stage(rank, c);
    starts.push_back(starts.back() + o.stage_blocks[g + 1] - o.stage_blocks[g]);
  }
  return starts;
}

PipelineSchedule::PipelineSchedule(nn::GPT& model, dist::Comm& pp, PipelineOptions options)
    : model_(model), pp_(pp), options_(std::move(options)), rank_(pp.rank()) {
  const PipelineShape& s = options_.shape;
  ND_CHECK(s.stages == pp.size(), "pipeline: " << s.stages << " stages on a pipeline group of " << pp.size());
  ND_CHECK(static_cast<int>(options_.stage_blocks.size()) == s.global_stages() + 1,
           "pipeline: " << options_.stage_blocks.size() << " stage boundaries for " << s.global_stages() << " stages");
  chunk_first_ = local_chunk_starts(options_, rank_);
  const std::vector<RankProgram> programs = pipeline_programs(pipeline_actions(options_.kind, s), s);
  // A program that could deadlock on NCCL fails here, on every rank, instead of hanging.
  const std::string deadlock = simulate_pipeline(programs, s, PassCosts{}, Delivery::WholeGroups).error;
  ND_CHECK(deadlock.empty(), "pipeline: the " << pipeline_kind_name(options_.kind) << " program would hang: " << deadlock);
  program_ = programs[rank_];
  // What the simulator checked is what this rank posts: each slot's groups (pipeline_plan.h).
  slot_groups_.resize(program_.groups.size());
  for (PostedGroup& g : posted_groups(program_)) slot_groups_[g.slot].push_back(std::move(g.transfers));
  const Device device = model_.device();
  const DType dtype = model_.dtype();
  for (int k = 0; k < s.virtual_ * s.micro; ++k) {
    activations_.push_back(Tensor::empty(options_.hidden, dtype, device));
    gradients_.push_back(Tensor::empty(options_.hidden, dtype, device));
  }
  in_flight_.resize(static_cast<size_t>(s.virtual_) * s.micro);
  weight_work_.resize(in_flight_.size());
  if (!options_.timeline_dir.empty())
    timeline_ = std::make_unique<PipelineTimeline>(options_.timeline_dir, device, options_.world_rank, rank_,
                                                   options_.kind, s);
}

void PipelineSchedule::post(size_t slot) {
  if (slot_groups_[slot].empty()) return;
  pp_.order_after_compute();
  // Usually one group; where the plan sends apart, the sends and then the receives.
  for (const std::vector<PipeTransfer>& group : slot_groups_[slot]) post_group(group);
}

void PipelineSchedule::post_group(const std::vector<PipeTransfer>& group) {
  const PipelineShape& s = options_.shape;
  pp_.group_start();
  for (const PipeTransfer& t : group) {
    const PipeMessage& m = t.message;
    if (t.send) {
      // A forward send leaves the stage before the receiver; a backward one the stage after it.
      const int chunk = s.chunk_of(m.forward ? m.to_stage - 1 : m.to_stage + 1);
      InFlight& f = slot(chunk, m.micro);
      pp_.send(m.forward ? f.output.data() : f.input.grad(), t.peer);
    } else {
      const int k = s.chunk_of(m.to_stage) * s.micro + m.micro;
      pp_.recv(m.forward ? activations_[k] : gradients_[k], t.peer);
    }
  }
  pp_.post_group();
}

void PipelineSchedule::wait_posted() {
  pp_.wait_posted();
  pp_.record_work().wait();  // later compute sees the received tensors
}

void PipelineSchedule::forward(const PipeAction& a, MicroBatches& batches, Generator& gen, uint64_t step_offset) {
  const int g = global(a.chunk), last = options_.shape.global_stages() - 1;
  const nn::GPT& model = model_;
  const DropoutDraws& d = options_.draws;
  const uint64_t per_forward = d.embed + d.block * options_.stage_blocks.back();
  gen.set_offset(step_offset + per_forward * a.micro + (g > 0 ? d.embed : 0) + d.block * options_.stage_blocks[g]);
  InFlight& f = slot(a.chunk, a.micro);
  Variable x;
  if (g == 0) {
    f.input = Variable();
    x = model.embed(batches.inputs[a.micro], gen);
  } else {
    f.input = Variable(activations_[a.chunk * options_.shape.micro + a.micro], /*requires_grad=*/true);
    x = f.input;
  }
  x = model.blocks(x, gen, chunk_first_[a.chunk], chunk_first_[a.chunk + 1]);
  if (g < last) {
    f.output = x;
    return;
  }
  nn::GPT::Output out = model.head(x, &batches.targets[a.micro], &batches.loss_gradient);
  batches.losses.narrow(a.micro, 1).view(Shape{}).copy_from(out.loss.data());
  f.output = out.loss;
}

void PipelineSchedule::backward(const PipeAction& a, MicroBatches& batches) {
  const size_t k = static_cast<size_t>(a.chunk) * options_.shape.micro + a.micro;
  if (a.op == PipeOp::BackwardWeight) {
    weight_work_[k].run();
    return;
  }
  // The input-gradient pass of zero-bubble queues the weight products for its W.
  std::optional<ops::DeferWeightGradients> deferred;
  if (a.op == PipeOp::BackwardInput) deferred.emplace(weight_work_[k]);
  InFlight& f = slot(a.chunk, a.micro);
  if (global(a.chunk) == options_.shape.global_stages() - 1)
    f.output.backward(batches.loss_scale);
  else
    f.output.backward(gradients_[a.chunk * options_.shape.micro + a.micro]);
  f.output = Variable();  // the graph goes; the input (and its gradient, to be sent) stays
}

void PipelineSchedule::run(nn::GPT& model, dist::DataParallelEngine& data_parallel, MicroBatches& batches,
                           Generator& dropout_gen) {
  ND_CHECK(&model == &model_, "pipeline: run on another model than its own");
  ND_CHECK(static_cast<int>(batches.inputs.size()) == options_.shape.micro,
           "pipeline: " << batches.inputs.size() << " micro-batches for a plan of " << options_.shape.micro);
  const uint64_t step_offset = dropout_gen.offset();
  if (timeline_) timeline_->begin_step();
  batches.losses.zero_();  // only the last stage writes its losses; the others add zeros below
  const auto& actions = program_.actions;
  // The data-parallel engine launches its buckets from the gradient hooks of the last backward.
  // Under zero-bubble the hooks of an input-gradient pass come before the weight gradients: no
  // backward is "last", and finalize_grads reduces every bucket after the last W.
  const bool split = options_.kind == PipelineKind::ZeroBubble;
  size_t first_backward = actions.size(), last_backward = split ? actions.size() : 0;
  for (size_t i = 0; i < actions.size(); ++i)
    if (actions[i].op == PipeOp::Backward || actions[i].op == PipeOp::BackwardInput) {
      first_backward = std::min(first_backward, i);
      if (!split) last_backward = i;
    }
  for (size_t i = 0; i < actions.size(); ++i) {
    post(i);
    if (program_.waits[i]) wait_posted();
    if (timeline_) timeline_->begin(actions[i]);
    if (actions[i].op == PipeOp::Forward) {
      forward(actions[i], batches, dropout_gen, step_offset);
    } else if (actions[i].op == PipeOp::BackwardWeight) {
      backward(actions[i], batches);
    } else {
      data_parallel.prepare_backward(i == first_backward, i == last_backward);
      backward(actions[i], batches);
    }
    if (timeline_) timeline_->end();
  }
  post(actions.size());
  wait_posted();
  if (split) data_parallel.prepare_backward(false, true);  // reduce every bucket at the finish
  for (InFlight& f : in_flight_) f = InFlight{};
  const DropoutDraws& d = options_.draws;
  dropout_gen.set_offset(step_offset + (d.embed + d.block * options_.stage_blocks.back()) * options_.shape.micro);
  pp_.allreduce(batches.losses, dist::ReduceOp::Sum);
  if (timeline_) timeline_->finish_step();
}

double pipeline_eval_loss(const nn::GPT& model, const EvalReader& reader, int iters, dist::Comm& pp,
                          const PipelineOptions& options) {
  NoGradGuard no_grad;
  Generator unused(0, 0);  // eval mode draws no dropout
  const PipelineShape& s = options.shape;
  const int rank = pp.rank(), last = s.global_stages() - 1;
  const std::vector<int> starts = local_chunk_starts(options, rank);
  double sum = 0.0;
  for (int k = 0; k < iters; ++k) {
    Batch batch = reader.batch(k);
    for (int g = 0; g <= last; ++g) {  // the stages in turn; this rank runs its own
      if (s.rank_of(g) != rank) continue;
      Variable x;
      if (g == 0) {
        x = model.embed(batch.inputs.to(model.device()), unused);
      } else {
        Tensor received = Tensor::empty(options.hidden, model.dtype(), model.device());
        pp.order_after_compute();
        pp.recv(received, s.rank_of(g - 1));
        pp.record_work().wait();
        x = Variable(received);
      }
      const int c = s.chunk_of(g);
      x = model.blocks(x, unused, starts[c], starts[c + 1]);
      if (g == last) {
        Tensor targets = batch.targets.to(model.device());
        sum += model.head(x, &targets).loss.data().item();
      } else {
        pp.order_after_compute();
        pp.send(x.data(), s.rank_of(g + 1));
        pp.record_work().wait();
      }
    }
  }
  pp.host_allreduce(&sum, 1, dist::HostReduce::Sum);  // the last stage's sum; the others add 0
  return sum / iters;
}

}  // namespace nd::train
