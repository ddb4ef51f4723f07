// plan_step (comm_plan.h): the collectives of each layout, listed the way the trainer issues them.
#include "dist/comm_plan.h"

#include <algorithm>
#include <string>

#include "dist/sequence_parallel.h"
#include "dist/flat_params.h"
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

void add(StepPlan& plan, const std::vector<AlphaBetaFit>& table, const std::string& impl, PlannedCall call) {
  if (call.calls == 0 || call.ranks <= 1) return;
  const AlphaBetaFit* fit = find_fit(table, call.op, impl, call.ranks);
  if (fit) {
    call.time_us = fit->predict_us(call.bytes, call.ranks);
    plan.total_us += call.time_us * call.calls;
    if (!call.hidden) plan.exposed_us += call.time_us * call.calls;
  } else if (std::find(plan.missing.begin(), plan.missing.end(), call.op + " " + impl) == plan.missing.end()) {
    plan.missing.push_back(call.op + " " + impl);
  }
  plan.calls.push_back(call);
}

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

std::vector<int64_t> bucket_lengths(const PlanShape& s) {
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
    }
    ends.back() = offsets[k] + entries[k];
  }
  std::vector<int64_t> lengths;
  for (size_t b = 0; b < begins.size(); ++b) lengths.push_back((b + 1 < begins.size() ? ends[b] : total) - begins[b]);
  return lengths;
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
  StepPlan plan;
  const int64_t m = s.grad_accum, L = s.n_layer / s.pp;  // layers per stage
  const int64_t BT = int64_t{s.batch_size} * s.block_size, act = BT * s.n_embd * s.act_bytes;
  auto call = [&](const char* group, const char* op, std::string what, int ranks, int64_t bytes, int64_t calls,
                  bool hidden) {
    add(plan, table, impl, {group, op, std::move(what), ranks, bytes, calls, hidden, -1});
  };

  // Tensor parallelism, per micro-batch, on every stage (a stage's share of the layers). Forward
  // collectives sit on the critical path; the backward all-reduce of a column-parallel input's
  // gradient overlaps that layer's weight-gradient GEMM (dist/tp_mappings.cpp).
  if (s.tp > 1 && !s.sequence_parallel) {
    call("tp", "allreduce", "row-parallel outputs (attention, MLP), forward", s.tp, act, m * 2 * L, false);
    call("tp", "allreduce", "column-parallel input gradients (attention, MLP), backward", s.tp, act, m * 2 * L, true);
    call("tp", "allreduce", "vocab-parallel embedding, forward", s.tp, act, m, false);
    call("tp", "allreduce", "head input gradient, backward", s.tp, act, m, true);
  } else if (s.tp > 1) {
    // The split linears (dist/sequence_parallel.h): forward collectives in k chunks of the share's
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

  // Data parallelism over the flat gradient buffer, bucket by bucket from the hooks: every bucket
  // but the last (the embeddings, final when backward ends) overlaps backward.
  if (s.dp > 1) {
    PlanShape stage = s;
    stage.n_layer = static_cast<int>(L);
    const std::vector<int64_t> buckets = bucket_lengths(stage);
    for (size_t b = 0; b < buckets.size(); ++b) {
      const bool last = b + 1 == buckets.size();
      const std::string name = "gradient bucket " + std::to_string(b + 1) + " of " + std::to_string(buckets.size());
      if (s.zero == 0) {
        call("dp", "allreduce", name, s.dp, buckets[b] * s.grad_bytes, 1, !last);
      } else {
        call("dp", "reducescatter", name + " (ZeRO)", s.dp, buckets[b] * s.grad_bytes, 1, !last);
      }
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
  // 2 GPUs over NVLink. beta: NCCL's and our ring's all-reduce bus bandwidth at 1 GiB on 2 H100
  // (326.2 and 311.0 GB/s, docs/PERFORMANCE.md "network path", commit ad6f75d); the
  // reduce-scatter and all-gather move half of it per byte of their size at 2 ranks. alpha: the
  // 8-byte all-reduce on 2 H200 (NCCL 7.9 us, ring 12.1 us, the same NVLink generation; the 2 H100
  // run's NCCL small sizes were disturbed). sendrecv: nccl-tests on 2 H200, 10.0 us, 364 GB/s.
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
