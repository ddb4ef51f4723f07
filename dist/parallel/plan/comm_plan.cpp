// plan_step (comm_plan.h): the collectives of each layout, listed the way the trainer issues them.
#include "dist/parallel/plan/comm_plan.h"

#include <algorithm>
#include <string>

#include "dist/parallel/plan/comm_overlap.h"
#include "dist/parallel/flat_params.h"
#include "dist/parallel/sequence_parallel.h"
#include "tensor/error.h"

namespace nd::dist {

namespace {

// As dist::FlatParams lays out the tensors.
int64_t aligned(int64_t offset, int element_bytes) {
  const int64_t step = kFlatAlignBytes / element_bytes;
  return (offset + step - 1) / step * step;
}

int64_t vocab_rows(const PlanShape& s) {
  if (!s.on_cuda && s.tp == 1) return s.vocab_size;
  const int64_t multiple = 128 * s.tp;
  return (s.vocab_size + multiple - 1) / multiple * multiple;
}

// Registration order of one block's parameters, tp shards: ln_1 (w, b), attn.c_attn (w, b),
// attn.c_proj (w, b), ln_2 (w, b), mlp.c_fc (w, b), mlp.c_proj (w, b).
std::vector<int64_t> block_params(const PlanShape& s) {
  const int64_t C = s.n_embd, t = s.tp;
  std::vector<int64_t> p = {C, C, 3 * C / t * C, 3 * C / t, C * (C / t), C, C, C, 4 * C / t * C, 4 * C / t, C * (4 * C / t), C};
  if (!s.bias) p = {C, 3 * C / t * C, C * (C / t), C, 4 * C / t * C, C * (4 * C / t)};
  return p;
}

// The call's time on an idle GPU from the table's fit for (op, impl); false (and noted) without
// one. Rows of another impl (a "+gemm" row of the lab's bench-comm --load gemm among them) are not read.
bool idle_time(StepPlan& plan, const std::vector<AlphaBetaFit>& table, const std::string& impl,
               const PlannedCall& call, double* idle) {
  const CollectiveModel model = find_model(table, call.op, impl, call.ranks);
  if (model.empty()) {
    if (std::find(plan.missing.begin(), plan.missing.end(), call.op + " " + impl) == plan.missing.end())
      plan.missing.push_back(call.op + " " + impl);
    return false;
  }
  *idle = model.predict_us(call.bytes, call.ranks);
  return true;
}

void record(StepPlan& plan, const PlannedCall& call) {
  if (call.time_us >= 0) {
    plan.total_us += call.time_us * static_cast<double>(call.calls);
    plan.exposed_us += call.exposed_us * static_cast<double>(call.calls);
  }
  plan.calls.push_back(call);
}

// Exposed calls: their idle time, all of it waited for. Calls beside a GEMM: after_gemm. Calls
// the schedule hides whole (kBesideAll: other stages' compute, prefetches): their idle time, none
// of it waited for.
void add(StepPlan& plan, const std::vector<AlphaBetaFit>& table, const std::string& impl, PlannedCall call) {
  if (call.calls == 0 || call.ranks <= 1) return;
  double idle = 0;
  if (idle_time(plan, table, impl, call, &idle)) {
    const Overlap o = !call.hidden                     ? Overlap{idle, idle}
                      : call.beside_us >= kBesideAll ? Overlap{idle, 0.0}
                                                     : after_gemm(idle, call.beside_us);
    call.time_us = o.time_us;
    call.exposed_us = o.exposed_us;
  }
  record(plan, call);
}

// us of `flops` at the shape's GEMM rate.
double gemm_us(const PlanShape& s, double flops) { return flops / (s.gemm_tflops * 1e6); }

}  // namespace

std::vector<int64_t> flat_entry_sizes(const PlanShape& s) {
  // Registration order: wte, wpe, blocks 0..L-1, ln_f; the layout reverses it.
  std::vector<int64_t> order = {vocab_rows(s) / s.tp * s.n_embd, int64_t{s.block_size} * s.n_embd};
  for (int l = 0; l < s.n_layer; ++l)
    for (int64_t p : block_params(s)) order.push_back(p);
  order.push_back(s.n_embd);
  if (s.bias) order.push_back(s.n_embd);
  std::reverse(order.begin(), order.end());
  return order;
}

int64_t flat_numel(const PlanShape& s) {
  int64_t numel = 0;
  for (int64_t n : flat_entry_sizes(s)) numel = aligned(numel, s.param_bytes) + n;
  return aligned(numel, s.param_bytes);
}

namespace {

// The buckets' lengths and the index of each one's last entry (dist/parallel/gradient_buckets.h's entry_buckets).
void bucket_layout(const PlanShape& s, std::vector<int64_t>* lengths, std::vector<size_t>* last_entries) {
  std::vector<int64_t> entries = flat_entry_sizes(s), begins;
  std::vector<int64_t> offsets;
  int64_t numel = 0;
  for (int64_t n : entries) {
    offsets.push_back(aligned(numel, s.param_bytes));
    numel = offsets.back() + n;
  }
  const int64_t total = aligned(numel, s.param_bytes);
  double cap = s.first_bucket_mb * 1e6;
  const double gb = s.grad_bytes;
  std::vector<int64_t> ends;  // of each bucket's last tensor: the padding after it is not sent
  for (size_t k = 0; k < entries.size(); ++k) {
    const double end_bytes = gb * static_cast<double>(offsets[k] + entries[k]);
    if (begins.empty() || gb * static_cast<double>(begins.back()) + cap < end_bytes) {
      if (!begins.empty()) cap = s.bucket_mb * 1e6;
      begins.push_back(begins.empty() ? 0 : offsets[k]);
      ends.push_back(0);
      last_entries->push_back(0);
    }
    ends.back() = offsets[k] + entries[k];
    last_entries->back() = k;
  }
  for (size_t b = 0; b < begins.size(); ++b) lengths->push_back((b + 1 < begins.size() ? ends[b] : total) - begins[b]);
}

// Backward of one micro-batch, GEMMs only, at the shape's rate (us): the head (its input and
// weight gradients, on the vocabulary shard) first, then each block: the MLP's linears, the
// attention's output linear, the causal attention (~4 B T^2 C) and the qkv linear, two products each.
struct BackwardTimes {
  double head = 0, mlp = 0, attn_proj = 0, rest = 0;  // rest: attention and qkv
  double attention = 0;                               // the attention's own kernel, part of rest
  double block() const { return mlp + attn_proj + rest; }
};
BackwardTimes backward_gemm_us(const PlanShape& s) {
  const double BT = static_cast<double>(s.batch_size) * s.block_size, C = s.n_embd, t = s.tp;
  BackwardTimes b;
  b.head = gemm_us(s, 4.0 * BT * C * static_cast<double>(vocab_rows(s)) / t);
  b.mlp = gemm_us(s, 4.0 * BT * 8.0 * C * C / t);
  b.attn_proj = gemm_us(s, 4.0 * BT * C * C / t);
  b.attention = gemm_us(s, 4.0 * BT * s.block_size * C / t);
  b.rest = gemm_us(s, 4.0 * BT * 3.0 * C * C / t) + b.attention;
  return b;
}

// When backward has made the flat entry `k` final: ln_f after the head; in a block (layout order
// mlp.c_proj, mlp.c_fc, ln_2, attn.c_proj, attn.c_attn, ln_1, biases before weights) the MLP's
// and ln_2's after the MLP's backward, attn.c_proj's after its own, the rest at the block's end;
// wpe and wte (the embedding's backward, and wte's tie to the head) when backward ends.
double entry_ready_us(const PlanShape& s, size_t k, const BackwardTimes& b) {
  const size_t lnf = s.bias ? 2 : 1, per_block = s.bias ? 12 : 6, L = static_cast<size_t>(s.n_layer);
  if (k < lnf) return b.head;
  if (k >= lnf + L * per_block) return b.head + static_cast<double>(L) * b.block() + s.backward_tail_us;
  const double start = b.head + static_cast<double>((k - lnf) / per_block) * b.block();
  const size_t at = (k - lnf) % per_block, per_linear = s.bias ? 2 : 1;  // mlp: 2 linears, then ln_2
  if (at < 3 * per_linear) return start + b.mlp;
  if (at < 4 * per_linear) return start + b.mlp + b.attn_proj;
  return start + b.block();
}

// The kernel a bucket whose last entry is `k` waits for when it is issued to an idle comm stream:
// the kernel after the op whose gradient hook made the bucket complete (DistributedDataParallel
// issues the all-reduce from that hook, behind an event after that op), which starts on the compute
// stream as the collective is released and holds the SMs until it ends. In a block (layout order:
// mlp.c_proj, mlp.c_fc, ln_2, attn.c_proj, attn.c_attn, ln_1): after the fused MLP's backward and
// after the qkv linear's comes a LayerNorm's backward; after a LayerNorm's (ln_2, ln_1, and ln_f
// after the head) the residual's add backward, or for the block backward ends with the embedding's
// backward (the tail less ln_1's); after attn.c_proj's linear the attention's backward. wpe and
// wte are final when backward ends: nothing follows them.
double entry_wait_us(const PlanShape& s, size_t k, const BackwardTimes& b) {
  const size_t lnf = s.bias ? 2 : 1, per_block = s.bias ? 12 : 6, L = static_cast<size_t>(s.n_layer);
  const double elements = static_cast<double>(s.batch_size) * s.block_size * s.n_embd;
  const double norm = s.norm_backward_ps * elements * 1e-6, add = s.add_backward_ps * elements * 1e-6;
  if (k < lnf) return add;
  if (k >= lnf + L * per_block) return 0.0;
  const size_t block = (k - lnf) / per_block, at = (k - lnf) % per_block, per_linear = s.bias ? 2 : 1;
  if (at < 2 * per_linear) return norm;                 // mlp.c_proj, mlp.c_fc: the fused MLP's node
  if (at < 3 * per_linear) return add;                  // ln_2
  if (at < 4 * per_linear) return b.attention;          // attn.c_proj
  if (at < 5 * per_linear) return norm;                 // attn.c_attn
  if (block + 1 < L) return add;                        // ln_1
  return std::max(0.0, s.backward_tail_us - norm);     // ln_1 of the block backward ends with
}

}  // namespace

std::vector<int64_t> bucket_lengths(const PlanShape& s) {
  std::vector<int64_t> lengths;
  std::vector<size_t> last;
  bucket_layout(s, &lengths, &last);
  return lengths;
}

std::vector<size_t> bucket_last_entries(const PlanShape& s) {
  std::vector<int64_t> lengths;
  std::vector<size_t> last;
  bucket_layout(s, &lengths, &last);
  return last;
}

StepPlan plan_step(const PlanShape& s, const std::vector<AlphaBetaFit>& table, const std::string& impl) {
  ND_CHECK_INPUT(s.tp >= 1 && s.dp >= 1 && s.pp >= 1, "plan: tp, dp and pp must be >= 1");
  ND_CHECK_INPUT(s.n_head % s.tp == 0 && s.n_embd % s.n_head == 0,
                 "plan: tp " << s.tp << " must divide the " << s.n_head << " heads, which must divide n_embd");
  ND_CHECK_INPUT(s.n_layer % s.pp == 0, "plan: pp " << s.pp << " must divide the " << s.n_layer << " layers");
  ND_CHECK_INPUT(!s.sequence_parallel || s.block_size % s.tp == 0,
                 "plan: with sequence parallelism tp must divide the sequence length");
  ND_CHECK_INPUT(s.zero >= 0 && s.zero <= 3, "plan: --zero must be 0, 1, 2 or 3");
  ND_CHECK_INPUT(s.batch_size >= 1 && s.grad_accum >= 1, "plan: batch size and grad-accum must be >= 1");
  ND_CHECK_INPUT(s.gemm_tflops > 0, "plan: --gemm-tflops must be > 0");
  ND_CHECK_INPUT(s.backward_tail_us >= 0, "plan: --backward-tail-us must be >= 0");
  ND_CHECK_INPUT(s.norm_backward_ps >= 0 && s.add_backward_ps >= 0,
                 "plan: --norm-backward-ps and --add-backward-ps must be >= 0");
  StepPlan plan;
  const int64_t m = s.grad_accum, L = s.n_layer / s.pp;  // layers per stage
  const int64_t BT = int64_t{s.batch_size} * s.block_size, act = BT * s.n_embd * s.act_bytes;
  // beside: the compute next to a hidden call (us); kBesideAll where the schedule hides it whole.
  auto call = [&](const char* group, const char* op, std::string what, int ranks, int64_t bytes, int64_t calls,
                  bool hidden, double beside = kBesideAll) {
    PlannedCall c{group, op, std::move(what), ranks, bytes, calls, hidden};
    c.beside_us = hidden ? beside : 0.0;
    add(plan, table, impl, c);
  };
  const double rows = static_cast<double>(BT), C = s.n_embd;

  // Tensor parallelism, per micro-batch, on every stage (a stage's share of the layers). Forward
  // collectives sit on the critical path; the backward all-reduce of a column-parallel input's
  // gradient is issued beside that linear's weight-gradient GEMM (ops::linear_reduced_dx): it
  // waits for that GEMM, then runs, and the next op waits for it (after_gemm). The fused MLP (ops::gelu_mlp) finishes its whole backward before
  // its input gradient is reduced (dist::copy_to_tp): nothing beside it.
  if (s.tp > 1 && !s.sequence_parallel) {
    call("tp", "allreduce", "row-parallel outputs (attention, MLP), forward", s.tp, act, m * 2 * L, false);
    call("tp", "allreduce", "attention input gradient (beside the qkv weight gradient), backward", s.tp, act, m * L,
         true, gemm_us(s, 2.0 * rows * C * 3.0 * C / s.tp));
    call("tp", "allreduce", "MLP input gradient (after the fused MLP's backward), backward", s.tp, act, m * L, false);
    call("tp", "allreduce", "vocab-parallel embedding, forward", s.tp, act, m, false);
    call("tp", "allreduce", "head input gradient (beside the head's weight gradient), backward", s.tp, act, m, true,
         gemm_us(s, 2.0 * rows * C * static_cast<double>(vocab_rows(s)) / s.tp));
  } else if (s.tp > 1) {
    // The split linears (dist/parallel/sequence_parallel.h): forward collectives in k chunks of the share's
    // rows (none: one each); the column-parallel backward gathers its input again beside the
    // input-gradient GEMM and reduce-scatters that gradient beside the weight-gradient GEMM.
    const int64_t rows = BT / s.tp;
    const int k = split_chunks(s.tp_overlap, rows * s.n_embd * s.act_bytes);
    auto chunked = [&](const char* op, const std::string& what, int64_t calls) {
      if (k == 0) return call("tp", op, what, s.tp, act, calls, false);
      for (int c = 0; c < k; ++c) {
        const int64_t chunk_rows = rows * (c + 1) / k - rows * c / k;
        // Gathers hide behind this rank's own block's GEMM and the earlier chunks'; the last
        // reduce-scatter waits for the last chunk's GEMMs.
        const bool hidden = std::string(op) == "allgather" || c + 1 < k;
        call("tp", op, what + ", chunk " + std::to_string(c + 1) + " of " + std::to_string(k), s.tp,
             s.tp * chunk_rows * s.n_embd * s.act_bytes, calls, hidden);
      }
    };
    chunked("allgather", "sequence-parallel gathers (attention, MLP in; head in), forward", m * (2 * L + 1));
    chunked("reducescatter", "sequence-parallel scatters (attention, MLP out), forward", m * 2 * L);
    call("tp", "reducescatter", "embedding scatter, forward", s.tp, act, m, false);
    call("tp", "allgather", "column-parallel inputs gathered again, backward", s.tp, act, m * (2 * L + 1), true);
    call("tp", "allgather", "output gradient gathers (attention, MLP out; embedding), backward", s.tp, act,
         m * (2 * L + 1), false);
    call("tp", "reducescatter", "input gradient scatters, backward", s.tp, act, m * (2 * L + 1), true);
    // finalize_grads: the replicated parameters' gradients (wpe, LayerNorms, row-parallel biases).
    const int64_t C = s.n_embd;
    const int64_t replicated = int64_t{s.block_size} * C + L * (s.bias ? 6 * C : 2 * C) + (s.bias ? 2 * C : C);
    call("tp", "allreduce", "sequence-parallel replicated gradients (finalize)", s.tp, replicated * s.grad_bytes, 1, false);
  }
  if (s.tp > 1) {
    // The vocab-parallel loss: row maxima, then target logits with sums of exponentials (f32).
    call("tp", "allreduce", "vocab-parallel loss: row maxima", s.tp, BT * 4, m, false);
    call("tp", "allreduce", "vocab-parallel loss: target logits and sums of exp", s.tp, 2 * BT * 4, m, false);
  }

  // Pipeline (1F1B): per micro-batch one activation forward and one gradient backward across each
  // stage boundary; the warm-up and cool-down transfers (pp - 1 each way) are exposed, the steady
  // state's overlap the other stages' compute. The tied embedding's gradient is summed between
  // the first and the last stage.
  if (s.pp > 1) {
    const int64_t shard = s.sequence_parallel ? act / s.tp : act;
    const int64_t per_boundary = 2 * m, exposed = std::min<int64_t>(per_boundary, 2);
    call("pp", "sendrecv", "stage boundary activations and gradients, warm-up and cool-down", 2, shard,
         exposed * (s.pp - 1), false);
    call("pp", "sendrecv", "stage boundary activations and gradients, steady state", 2, shard,
         (per_boundary - exposed) * (s.pp - 1), true);
    call("embedding", "allreduce", "tied embedding gradient (first and last stage)", 2,
         vocab_rows(s) / s.tp * s.n_embd * s.grad_bytes, 1, false);
  }

  // Data parallelism over the flat gradient buffer, bucket by bucket from the hooks, in the last
  // micro-batch's backward: each bucket is reduced once its gradients are final and the bucket
  // before it is done, first waiting for the backward kernel in flight when it is issued to an
  // idle stream (queue_buckets, entry_wait_us), at the idle rate; a bucket holding wpe or wte is
  // final only when backward ends (the embedding's backward).
  if (s.dp > 1) {
    PlanShape stage = s;
    stage.n_layer = static_cast<int>(L);
    const std::vector<int64_t> buckets = bucket_lengths(stage);
    const std::vector<size_t> last_entries = bucket_last_entries(stage);
    const BackwardTimes backward = backward_gemm_us(stage);
    plan.backward_us = backward.head + static_cast<double>(L) * backward.block() + stage.backward_tail_us;
    std::vector<PlannedCall> pending;
    std::vector<QueuedBucket> queue;
    for (size_t b = 0; b < buckets.size(); ++b) {
      const double ready = entry_ready_us(stage, last_entries[b], backward);
      const std::string name = "gradient bucket " + std::to_string(b + 1) + " of " + std::to_string(buckets.size()) +
                               (ready < plan.backward_us ? "" : ", final at backward's end");
      PlannedCall c{"dp", s.zero == 0 ? "allreduce" : "reducescatter", s.zero == 0 ? name : name + " (ZeRO)",
                    s.dp, buckets[b] * s.grad_bytes, 1, ready < plan.backward_us};
      double idle = 0;
      if (!idle_time(plan, table, impl, c, &idle)) {
        record(plan, c);
        continue;
      }
      c.beside_us = entry_wait_us(stage, last_entries[b], backward);
      pending.push_back(c);
      queue.push_back({ready, idle, c.beside_us});
    }
    const std::vector<Overlap> timed = queue_buckets(queue, plan.backward_us);
    for (size_t b = 0; b < pending.size(); ++b) {
      pending[b].time_us = timed[b].time_us;
      pending[b].exposed_us = timed[b].exposed_us;
      record(plan, pending[b]);
    }
    const int64_t params = flat_numel(stage) * s.param_bytes;
    if (s.zero == 1 || s.zero == 2) {
      call("dp", "allgather", "updated parameter shards after the optimizer (ZeRO-1/2)", s.dp, params, 1, false);
    } else if (s.zero == 3) {
      // FSDP: each block's parameters gathered before its forward and again before its backward;
      // prefetch hides all but the first gather of each pass.
      const int64_t per_block = params / std::max<int64_t>(1, L);
      call("dp", "allgather", "block parameters before forward and backward (ZeRO-3), first of each pass", s.dp,
           per_block, 2 * m, false);
      call("dp", "allgather", "block parameters, prefetched (ZeRO-3)", s.dp, per_block, 2 * m * (L - 1), true);
    }
  }
  return plan;
}

std::vector<AlphaBetaFit> default_fit_table() {
  // 2 Hopper GPUs over NVLink, from bench-comm's and nccl-tests' sweeps (docs/benchmarks/). beta:
  // NCCL's and our ring's all-reduce bus bandwidth at 1 GiB; the reduce-scatter and all-gather move
  // half of it per byte of their size at 2 ranks. alpha: the 8-byte all-reduce. sendrecv: nccl-tests'
  // latency and bandwidth.
  auto fit = [](const char* op, const char* impl, double alpha, double busbw_gbps, double bus) {
    AlphaBetaFit f;
    f.op = op;
    f.impl = impl;
    f.nranks = 2;
    f.alpha_us = alpha;
    f.beta_us_per_byte = bus * 1e-3 / busbw_gbps;
    f.points = 0;
    return f;
  };
  return {fit("allreduce", "native", 7.9, 326.2, 1.0),       fit("allreduce", "ring", 12.1, 311.0, 1.0),
          fit("reducescatter", "native", 7.9, 326.2, 0.5),   fit("reducescatter", "ring", 12.1, 311.0, 0.5),
          fit("allgather", "native", 7.9, 326.2, 0.5),       fit("allgather", "ring", 12.1, 311.0, 0.5),
          fit("sendrecv", "native", 10.0, 364.0, 1.0),       fit("sendrecv", "ring", 10.0, 364.0, 1.0)};
}

}  // namespace nd::dist
