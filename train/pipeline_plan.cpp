// The schedules' action lists and the communication derived from them (pipeline_plan.h).
#include "train/pipeline_plan.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <sstream>

#include "tensor/error.h"

namespace nd::train {

PipelineKind parse_pipeline_kind(const std::string& name) {
  if (name == "gpipe") return PipelineKind::GPipe;
  if (name == "1f1b") return PipelineKind::OneFOneB;
  if (name == "interleaved") return PipelineKind::Interleaved;
  if (name == "zb") return PipelineKind::ZeroBubble;
  ND_FAIL_INPUT("--pp-schedule must be gpipe, 1f1b, interleaved or zb, got '" << name << "'");
}

const char* pipeline_kind_name(PipelineKind kind) {
  switch (kind) {
    case PipelineKind::GPipe: return "gpipe";
    case PipelineKind::OneFOneB: return "1f1b";
    case PipelineKind::Interleaved: return "interleaved";
    case PipelineKind::ZeroBubble: return "zb";
  }
  return "?";
}

const char* pipe_op_name(PipeOp op) {
  switch (op) {
    case PipeOp::Forward: return "F";
    case PipeOp::Backward: return "B";
    case PipeOp::BackwardInput: return "Bi";
    case PipeOp::BackwardWeight: return "W";
  }
  return "?";
}

std::string PipeMessage::str() const {
  std::ostringstream out;
  out << (forward ? "activation" : "gradient") << " of micro-batch " << micro << " for stage " << to_stage;
  return out.str();
}

namespace {

using Plan = std::vector<std::vector<PipeAction>>;

PipeAction F(int micro, int chunk = 0) { return {PipeOp::Forward, micro, chunk}; }
PipeAction B(int micro, int chunk = 0) { return {PipeOp::Backward, micro, chunk}; }

Plan gpipe(const PipelineShape& s) {
  Plan plan(s.stages);
  for (int r = 0; r < s.stages; ++r) {
    for (int m = 0; m < s.micro; ++m) plan[r].push_back(F(m));
    for (int m = 0; m < s.micro; ++m) plan[r].push_back(B(m));
  }
  return plan;
}

// 1F1B over `count` units whose k-th forward and backward are given: warm-up forwards, then
// forward and backward in turn, then the remaining backwards.
template <typename Fwd, typename Bwd>
std::vector<PipeAction> one_f_one_b(int count, int warmup, Fwd fwd, Bwd bwd) {
  warmup = std::min(warmup, count);
  std::vector<PipeAction> out;
  for (int k = 0; k < warmup; ++k) out.push_back(fwd(k));
  for (int k = 0; k < count - warmup; ++k) {
    out.push_back(fwd(warmup + k));
    out.push_back(bwd(k));
  }
  for (int k = count - warmup; k < count; ++k) out.push_back(bwd(k));
  return out;
}

Plan one_f_one_b(const PipelineShape& s) {
  Plan plan(s.stages);
  for (int r = 0; r < s.stages; ++r)
    plan[r] = one_f_one_b(s.micro, s.stages - r - 1, [](int k) { return F(k); }, [](int k) { return B(k); });
  return plan;
}

// Megatron's interleaving: the k-th (micro-batch, chunk) unit of a rank goes through the chunks
// in groups of P micro-batches; backwards visit the chunks in reverse.
Plan interleaved(const PipelineShape& s) {
  const int P = s.stages, V = s.virtual_, units = s.micro * V;
  auto micro_of = [P, V](int k) { return (k / (P * V)) * P + k % P; };
  auto chunk_of = [P, V](int k) { return (k % (P * V)) / P; };
  Plan plan(P);
  for (int r = 0; r < P; ++r) {
    const int warmup = (P - r - 1) * 2 + (V - 1) * P;
    plan[r] = one_f_one_b(
        units, warmup, [&](int k) { return F(micro_of(k), chunk_of(k)); },
        [&](int k) { return B(micro_of(k), V - 1 - chunk_of(k)); });
  }
  return plan;
}

// ZB-H1: 1F1B's forwards and input-gradient backwards, in that order; the weight passes go where
// the rank would wait. Placed by a unit-time simulation of every rank (each pass one unit, a
// message available the unit after it was produced).
Plan zero_bubble(const PipelineShape& s) {
  const int P = s.stages, M = s.micro;
  Plan order = one_f_one_b(s);
  for (auto& actions : order)
    for (PipeAction& a : actions)
      if (a.op == PipeOp::Backward) a.op = PipeOp::BackwardInput;
  // done_f[r][m], done_b[r][m]: the unit at whose end the pass finished (-1: not yet).
  std::vector<std::vector<int>> done_f(P, std::vector<int>(M, -1)), done_b(P, std::vector<int>(M, -1));
  std::vector<size_t> next(P, 0);
  std::vector<std::deque<int>> deferred(P);  // micro-batches whose W has not run
  std::vector<int> in_flight(P, 0);          // forwarded, W not run
  Plan plan(P);
  auto ready = [&](int r, const PipeAction& a, int t) {
    if (a.op == PipeOp::Forward) return r == 0 || (done_f[r - 1][a.micro] >= 0 && done_f[r - 1][a.micro] < t);
    if (r == P - 1) return done_f[r][a.micro] >= 0 && done_f[r][a.micro] < t;
    return done_b[r + 1][a.micro] >= 0 && done_b[r + 1][a.micro] < t;
  };
  for (int t = 0;; ++t) {
    bool all_done = true;
    for (int r = 0; r < P; ++r) {
      const bool order_done = next[r] == order[r].size();
      if (order_done && deferred[r].empty()) continue;
      all_done = false;
      // A forward only while fewer than P micro-batches hold activations here (1F1B's peak, on
      // rank 0): those forwarded whose weight pass has not run.
      const bool memory_full = !order_done && order[r][next[r]].op == PipeOp::Forward && in_flight[r] >= P;
      if (!order_done && !memory_full && ready(r, order[r][next[r]], t)) {
        PipeAction a = order[r][next[r]++];
        plan[r].push_back(a);
        if (a.op == PipeOp::Forward) {
          done_f[r][a.micro] = t;
          ++in_flight[r];
        } else {
          done_b[r][a.micro] = t;
          deferred[r].push_back(a.micro);
        }
      } else if (!deferred[r].empty()) {
        plan[r].push_back({PipeOp::BackwardWeight, deferred[r].front(), 0});
        deferred[r].pop_front();
        --in_flight[r];
      }
    }
    if (all_done) break;
    ND_CHECK(t < 16 * (M + P) * 3, "zero-bubble placement did not finish (P " << P << ", m " << M << ")");
  }
  return plan;
}

}  // namespace

std::vector<std::vector<PipeAction>> pipeline_actions(PipelineKind kind, const PipelineShape& s) {
  ND_CHECK_INPUT(s.stages >= 1, "pipeline: stages must be >= 1, got " << s.stages);
  ND_CHECK_INPUT(s.micro >= 1, "pipeline: micro-batches must be >= 1, got " << s.micro);
  if (kind == PipelineKind::Interleaved) {
    ND_CHECK_INPUT(s.virtual_ >= 2, "--pp-schedule interleaved needs --pp-virtual >= 2, got " << s.virtual_);
    ND_CHECK_INPUT(s.micro % s.stages == 0 && s.micro > s.stages,
                   "--pp-schedule interleaved: the " << s.micro << " micro-batches of a step (--grad-accum) must be a "
                                                     << "multiple of --pp " << s.stages << " above it");
  } else {
    ND_CHECK_INPUT(s.virtual_ == 1, "--pp-virtual " << s.virtual_ << " needs --pp-schedule interleaved, not "
                                                    << pipeline_kind_name(kind));
  }
  switch (kind) {
    case PipelineKind::GPipe: return gpipe(s);
    case PipelineKind::OneFOneB: return one_f_one_b(s);
    case PipelineKind::Interleaved: return interleaved(s);
    case PipelineKind::ZeroBubble: return zero_bubble(s);
  }
  return {};
}

namespace {

// Sets sends_apart where a group exchanges with one peer transfers that the peer posts in
// different groups (pipeline_plan.h): the k-th send of a (sender, receiver) pair meets its k-th
// receive, as NCCL and MPI match them.
void keep_groups_whole(std::vector<RankProgram>& programs) {
  using Channel = std::pair<int, int>;  // (sender, receiver)
  std::map<Channel, std::vector<size_t>> send_slots, recv_slots;  // the slot of each k-th transfer
  for (size_t r = 0; r < programs.size(); ++r)
    for (size_t i = 0; i < programs[r].groups.size(); ++i)
      for (const PipeTransfer& t : programs[r].groups[i]) {
        const int me = static_cast<int>(r);
        if (t.send)
          send_slots[{me, t.peer}].push_back(i);
        else
          recv_slots[{t.peer, me}].push_back(i);
      }
  for (size_t r = 0; r < programs.size(); ++r) {
    RankProgram& p = programs[r];
    const int me = static_cast<int>(r);
    p.sends_apart.assign(p.groups.size(), false);
    std::map<Channel, size_t> sends_seen, recvs_seen;
    for (size_t i = 0; i < p.groups.size(); ++i) {
      std::map<int, std::set<size_t>> partner_slots;  // peer -> the slots of its side of this group
      for (const PipeTransfer& t : p.groups[i]) {
        const Channel channel = t.send ? Channel{me, t.peer} : Channel{t.peer, me};
        const size_t k = (t.send ? sends_seen : recvs_seen)[channel]++;
        const std::vector<size_t>& other = (t.send ? recv_slots : send_slots)[channel];
        if (k < other.size()) partner_slots[t.peer].insert(other[k]);
      }
      for (const auto& [peer, slots] : partner_slots)
        if (slots.size() > 1) p.sends_apart[i] = true;
    }
  }
}

}  // namespace

std::vector<PostedGroup> posted_groups(const RankProgram& p) {
  std::vector<PostedGroup> out;
  for (size_t i = 0; i < p.groups.size(); ++i) {
    const bool apart = i < p.sends_apart.size() && p.sends_apart[i];
    for (int part = 0; part < (apart ? 2 : 1); ++part) {
      PostedGroup g{i, {}};
      for (const PipeTransfer& t : p.groups[i])
        if (!apart || t.send == (part == 0)) g.transfers.push_back(t);
      if (!g.transfers.empty()) out.push_back(std::move(g));
    }
  }
  return out;
}

std::vector<RankProgram> pipeline_programs(const std::vector<std::vector<PipeAction>>& actions,
                                           const PipelineShape& s) {
  const int last = s.global_stages() - 1;
  std::vector<RankProgram> programs(actions.size());
  for (size_t r = 0; r < actions.size(); ++r) {
    RankProgram& p = programs[r];
    p.actions = actions[r];
    const size_t n = p.actions.size();
    p.groups.assign(n + 1, {});
    p.waits.assign(n + 1, false);
    p.waits[n] = true;
    // What each action receives before it runs and sends after.
    std::vector<std::vector<PipeTransfer>> needs(n), gives(n);
    for (size_t i = 0; i < n; ++i) {
      const PipeAction& a = p.actions[i];
      const int g = s.global_stage(static_cast<int>(r), a.chunk);
      if (a.op == PipeOp::Forward) {
        if (g > 0) needs[i].push_back({false, s.rank_of(g - 1), {true, a.micro, g}});
        if (g < last) gives[i].push_back({true, s.rank_of(g + 1), {true, a.micro, g + 1}});
      } else if (a.op == PipeOp::Backward || a.op == PipeOp::BackwardInput) {
        if (g < last) needs[i].push_back({false, s.rank_of(g + 1), {false, a.micro, g}});
        if (g > 0) gives[i].push_back({true, s.rank_of(g - 1), {false, a.micro, g - 1}});
      }
    }
    // Passes that communicate, and where the groups go between them: before every pass (one group
    // per pass), except that under interleaving a forward and the backward after it share one
    // group after the backward (Megatron's send_forward_backward_recv_forward_backward), which
    // the one-group-per-pass program's cycle between the chunks needs.
    std::vector<size_t> passes;
    for (size_t i = 0; i < n; ++i)
      if (p.actions[i].op != PipeOp::BackwardWeight) passes.push_back(i);
    auto backward = [&](size_t q) { return p.actions[passes[q]].op != PipeOp::Forward; };
    std::vector<size_t> bounds;  // a group before passes[bounds[b]]
    for (size_t q = 0; q < passes.size(); ++q)
      if (q == 0 || s.virtual_ == 1 || backward(q - 1) || !backward(q)) bounds.push_back(q);
    bounds.push_back(passes.size());
    // Group b: the sends of the passes since the previous group and the receives of the passes
    // until the next, posted right after the previous pass (weight passes run while it is in
    // flight), waited before the pass.
    for (size_t b = 0; b + 1 < bounds.size(); ++b) {
      const size_t q = bounds[b];
      auto& group = p.groups[q == 0 ? 0 : passes[q - 1] + 1];
      if (b > 0)
        for (size_t k = bounds[b - 1]; k < q; ++k) group.insert(group.end(), gives[passes[k]].begin(), gives[passes[k]].end());
      for (size_t k = q; k < bounds[b + 1]; ++k) group.insert(group.end(), needs[passes[k]].begin(), needs[passes[k]].end());
      p.waits[passes[q]] = !group.empty();
    }
    if (!passes.empty()) {
      auto& group = p.groups[passes.back() + 1];
      for (size_t k = bounds[bounds.size() - 2]; k < passes.size(); ++k)
        group.insert(group.end(), gives[passes[k]].begin(), gives[passes[k]].end());
    }
  }
  keep_groups_whole(programs);
  return programs;
}

double ideal_bubble_fraction(PipelineKind kind, const PipelineShape& s) {
  const double P = s.stages, m = s.micro, V = s.virtual_;
  if (kind == PipelineKind::ZeroBubble) return (P - 1) / (3 * m);  // (P-1)(F+B-W) over m(F+B+W), F = B = W
  return (P - 1) / (V * m);
}

}  // namespace nd::train
