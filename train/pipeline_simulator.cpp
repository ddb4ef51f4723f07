// The pipeline simulator of pipeline_simulator.h: transfers match in call order per (sender,
// receiver) pair, as NCCL and MPI (one tag) match them.
#include "train/pipeline_simulator.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace nd::train {
namespace {

struct Posted {
  bool posted = false;
  double time = 0.0;
};

double cost_of(const PipeAction& a, const PassCosts& c) {
  switch (a.op) {
    case PipeOp::Forward: return c.forward;
    case PipeOp::Backward: return c.backward_input + c.backward_weight;
    case PipeOp::BackwardInput: return c.backward_input;
    case PipeOp::BackwardWeight: return c.backward_weight;
  }
  return 0.0;
}

// Every action's inputs are computed before it on the same rank or by the message it receives:
// a backward after its forward, a weight pass after its input pass; each (op, micro, chunk) once.
std::string check_local_order(const std::vector<RankProgram>& programs, const PipelineShape& s) {
  for (size_t r = 0; r < programs.size(); ++r) {
    std::set<std::tuple<int, int, int>> done;
    for (const PipeAction& a : programs[r].actions) {
      auto key = [&](PipeOp op) { return std::make_tuple(static_cast<int>(op), a.micro, a.chunk); };
      std::ostringstream where;
      where << "rank " << r << ": " << pipe_op_name(a.op) << " of micro-batch " << a.micro << " chunk " << a.chunk;
      if (a.micro < 0 || a.micro >= s.micro || a.chunk < 0 || a.chunk >= s.virtual_) return where.str() + " out of range";
      if (done.count(key(a.op))) return where.str() + " runs twice";
      if ((a.op == PipeOp::Backward || a.op == PipeOp::BackwardInput) && !done.count(key(PipeOp::Forward)))
        return where.str() + " before its forward";
      if (a.op == PipeOp::BackwardWeight && !done.count(key(PipeOp::BackwardInput)))
        return where.str() + " before its input gradient";
      done.insert(key(a.op));
    }
    const bool split = std::any_of(programs[r].actions.begin(), programs[r].actions.end(),
                                   [](const PipeAction& a) { return a.op == PipeOp::BackwardInput; });
    const size_t expected = static_cast<size_t>(s.micro) * s.virtual_ * (split ? 3 : 2);
    if (done.size() != expected) {
      std::ostringstream out;
      out << "rank " << r << " runs " << done.size() << " passes, not " << expected;
      return out.str();
    }
  }
  return "";
}

std::string slot_name(const RankProgram& p, size_t slot) {
  if (slot >= p.actions.size()) return "the step's end";
  const PipeAction& a = p.actions[slot];
  std::ostringstream out;
  out << pipe_op_name(a.op) << " of micro-batch " << a.micro << " chunk " << a.chunk;
  return out.str();
}

// Delivery::WholeGroups: each rank waits at its next group (posted_groups) until that group can
// move, which it can once every transfer in it meets its other side in the group its peer is at,
// that group able to move too (a greatest fixed point: two groups that exchange with each other
// move together). Compute never waits, so only the order of the groups matters. Assumes the
// transfers match one to one (checked before).
std::string check_whole_groups(const std::vector<RankProgram>& programs) {
  using Channel = std::pair<int, int>;  // (sender, receiver)
  const int P = static_cast<int>(programs.size());
  std::vector<std::vector<PostedGroup>> groups(P);
  std::map<Channel, std::vector<size_t>> send_group, recv_group;  // the group of each k-th transfer
  for (int r = 0; r < P; ++r) {
    groups[r] = posted_groups(programs[r]);
    for (size_t j = 0; j < groups[r].size(); ++j)
      for (const PipeTransfer& t : groups[r][j].transfers)
        (t.send ? send_group[{r, t.peer}] : recv_group[{t.peer, r}]).push_back(j);
  }
  // partner[r][j][t]: the group of rank t.peer holding the other side of transfer t.
  std::vector<std::vector<std::vector<size_t>>> partner(P);
  for (int r = 0; r < P; ++r) {
    std::map<Channel, size_t> sends_seen, recvs_seen;
    for (const PostedGroup& g : groups[r]) {
      partner[r].emplace_back();
      for (const PipeTransfer& t : g.transfers) {
        const Channel channel = t.send ? Channel{r, t.peer} : Channel{t.peer, r};
        const size_t k = (t.send ? sends_seen : recvs_seen)[channel]++;
        partner[r].back().push_back((t.send ? recv_group : send_group)[channel].at(k));
      }
    }
  }
  std::vector<size_t> at(P, 0);
  for (;;) {
    std::vector<bool> moves(P);
    bool any_left = false;
    for (int r = 0; r < P; ++r) any_left |= (moves[r] = at[r] < groups[r].size());
    if (!any_left) return "";
    for (bool changed = true; changed;) {
      changed = false;
      for (int r = 0; r < P; ++r) {
        if (!moves[r]) continue;
        const auto& transfers = groups[r][at[r]].transfers;
        for (size_t t = 0; t < transfers.size(); ++t) {
          const int q = transfers[t].peer;
          if (!moves[q] || at[q] != partner[r][at[r]][t]) {
            moves[r] = false;
            changed = true;
            break;
          }
        }
      }
    }
    bool moved = false;
    for (int r = 0; r < P; ++r)
      if (moves[r]) {
        ++at[r];
        moved = true;
      }
    if (moved) continue;
    // Nothing moves: name the first waiting rank and what its group waits for.
    for (int r = 0; r < P; ++r) {
      if (at[r] >= groups[r].size()) continue;
      const auto& transfers = groups[r][at[r]].transfers;
      for (size_t t = 0; t < transfers.size(); ++t) {
        const int q = transfers[t].peer;
        const size_t other = partner[r][at[r]][t];
        if (at[q] == other) continue;
        std::ostringstream e;
        e << "deadlock (NCCL moves a group as a whole): rank " << r << " waits in its group before "
          << slot_name(programs[r], groups[r][at[r]].slot) << ", whose " << transfers[t].message.str() << " rank "
          << q << " " << (transfers[t].send ? "receives" : "sends") << " in its group before "
          << slot_name(programs[q], groups[q][other].slot) << ", while rank " << q << " waits in its group before "
          << (at[q] < groups[q].size() ? slot_name(programs[q], groups[q][at[q]].slot) : std::string("nothing"));
        return e.str();
      }
    }
    return "deadlock (NCCL moves a group as a whole): no group can move";
  }
}

}  // namespace

SimulationResult simulate_pipeline(const std::vector<RankProgram>& programs, const PipelineShape& s,
                                   const PassCosts& costs, Delivery delivery) {
  const bool rendezvous = delivery != Delivery::Eager;
  SimulationResult result;
  const int P = static_cast<int>(programs.size());
  result.spans.assign(P, {});
  result.error = check_local_order(programs, s);
  if (!result.error.empty()) return result;

  // Each transfer's index on its channel (sender, receiver): the k-th send meets the k-th receive.
  using Channel = std::pair<int, int>;
  std::map<Channel, std::vector<PipeMessage>> sent, received;
  std::vector<std::vector<std::vector<int>>> index(P);  // [rank][group][transfer]
  for (int r = 0; r < P; ++r) {
    index[r].resize(programs[r].groups.size());
    for (size_t g = 0; g < programs[r].groups.size(); ++g)
      for (const PipeTransfer& t : programs[r].groups[g]) {
        auto& list = t.send ? sent[{r, t.peer}] : received[{t.peer, r}];
        index[r][g].push_back(static_cast<int>(list.size()));
        list.push_back(t.message);
      }
  }
  for (const auto& [channel, messages] : received) {
    const auto& out = sent[channel];
    for (size_t k = 0; k < messages.size(); ++k) {
      std::ostringstream e;
      if (k >= out.size()) {
        e << "rank " << channel.second << " waits for the " << messages[k].str() << " from rank " << channel.first
          << ", which never sends it";
        result.error = e.str();
        return result;
      }
      if (!(out[k] == messages[k])) {
        e << "rank " << channel.second << " receives the " << out[k].str() << " from rank " << channel.first
          << " where it expects the " << messages[k].str();
        result.error = e.str();
        return result;
      }
    }
  }
  for (const auto& [channel, messages] : sent)
    if (messages.size() > received[channel].size()) {
      std::ostringstream e;
      e << "rank " << channel.first << " sends the " << messages[received[channel].size()].str() << " to rank "
        << channel.second << ", which never receives it";
      result.error = e.str();
      return result;
    }

  if (delivery == Delivery::WholeGroups) {
    result.error = check_whole_groups(programs);
    if (!result.error.empty()) return result;
  }

  // Post times of each channel's k-th send and receive.
  std::map<Channel, std::vector<Posted>> send_posts, recv_posts;
  for (const auto& [channel, messages] : sent) send_posts[channel].assign(messages.size(), {});
  for (const auto& [channel, messages] : received) recv_posts[channel].assign(messages.size(), {});
  struct Pending {  // a posted transfer not yet waited for: the other side's post, by channel
    bool send;
    Channel channel;
    int k;
  };
  std::vector<size_t> at(P, 0);          // the next group (and action) of each rank
  std::vector<bool> group_posted(P, false);
  std::vector<std::vector<Pending>> pending(P);
  std::vector<double> clock(P, 0.0), busy(P, 0.0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < P; ++r) {
      const RankProgram& p = programs[r];
      while (at[r] < p.groups.size()) {
        const size_t i = at[r];
        if (!group_posted[r]) {
          for (size_t t = 0; t < p.groups[i].size(); ++t) {
            const PipeTransfer& x = p.groups[i][t];
            const Channel channel = x.send ? Channel{r, x.peer} : Channel{x.peer, r};
            const int k = index[r][i][t];
            (x.send ? send_posts : recv_posts)[channel][k] = {true, clock[r]};
            pending[r].push_back({x.send, channel, k});
          }
          group_posted[r] = true;
          progress = true;
        }
        if (p.waits[i]) {
          // Everything posted completes once its other side is posted: a receive its send, a
          // send (rendezvous) its receive.
          double end = clock[r];
          bool complete = true;
          for (const Pending& x : pending[r]) {
            if (x.send && !rendezvous) continue;
            const Posted& other = (x.send ? recv_posts : send_posts)[x.channel][x.k];
            complete = complete && other.posted;
            end = std::max(end, other.time);
          }
          if (!complete) break;
          clock[r] = end;
          pending[r].clear();
        }
        if (i < p.actions.size()) {
          const PipeAction& a = p.actions[i];
          const double start = clock[r], cost = cost_of(a, costs);
          clock[r] += cost;
          busy[r] += cost;
          result.spans[r].push_back({a, start, clock[r]});
        }
        group_posted[r] = false;
        ++at[r];
        progress = true;
      }
    }
  }
  for (int r = 0; r < P; ++r) {
    if (at[r] < programs[r].groups.size()) {
      const size_t i = at[r];
      std::ostringstream e;
      e << "deadlock: rank " << r << " waits for its transfers before ";
      if (i < programs[r].actions.size())
        e << pipe_op_name(programs[r].actions[i].op) << " of micro-batch " << programs[r].actions[i].micro
          << " chunk " << programs[r].actions[i].chunk;
      else
        e << "the step's end";
      result.error = e.str();
      return result;
    }
  }
  for (int r = 0; r < P; ++r) result.makespan = std::max(result.makespan, clock[r]);
  for (int r = 0; r < P; ++r)
    result.bubble_fraction = std::max(result.bubble_fraction, (result.makespan - busy[r]) / busy[r]);
  return result;
}

}  // namespace nd::train
