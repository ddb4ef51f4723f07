// Pipeline schedules as data: for each rank of a pipeline, the list of its compute actions
// (forward, backward, or under zero-bubble the backward split into input and weight gradients) in
// the order it runs them, and the communication the runtime derives from that list (one grouped
// send/recv between two actions). Pure functions: the runtime (train/pipeline_schedule.h) runs
// these lists, and the simulator (train/pipeline_simulator.h) checks and times the same lists.
#pragma once
#include <string>
#include <vector>

namespace nd::train {

enum class PipelineKind { GPipe, OneFOneB, Interleaved, ZeroBubble };
// "gpipe" | "1f1b" | "interleaved" | "zb"; anything else raises (a one-line input error).
PipelineKind parse_pipeline_kind(const std::string& name);
const char* pipeline_kind_name(PipelineKind kind);

// Forward; Backward: the whole backward of a stage (input and weight gradients); BackwardInput:
// only the gradient of the stage's input (the critical path), BackwardWeight: the deferred weight
// gradients of that micro-batch (zero-bubble).
enum class PipeOp { Forward, Backward, BackwardInput, BackwardWeight };
const char* pipe_op_name(PipeOp op);  // "F", "B", "Bi", "W"

struct PipeAction {
  PipeOp op = PipeOp::Forward;
  int micro = 0;  // the micro-batch
  int chunk = 0;  // the model chunk of this rank (interleaved), 0 otherwise
};

struct PipelineShape {
  int stages = 1;   // P: ranks of the pipeline
  int micro = 1;    // m: micro-batches of a step
  int virtual_ = 1; // V: model chunks per rank (interleaved; 1 otherwise)
  // The global stage of (rank, chunk): chunk * P + rank (Megatron's interleaving: rank 0 holds
  // stages 0, P, 2P, ...). Stage 0 holds the embeddings, stage P V - 1 the head and loss.
  int global_stage(int rank, int chunk) const { return chunk * stages + rank; }
  int rank_of(int global) const { return global % stages; }
  int chunk_of(int global) const { return global / stages; }
  int global_stages() const { return stages * virtual_; }
};

// The actions of every rank (index = pipeline rank). Raises nd::Error (an input error) when the
// shape does not suit the kind: P >= 1, m >= 1, V == 1 except for interleaved, and for
// interleaved V >= 2 and m a multiple of P above P (the micro-batches go round the ranks in
// groups of P; at m = P every pass would be warm-up, whose transfers need other groups).
//  GPipe: every forward, then every backward (micro-batches in order).
//  1F1B: P - rank - 1 forwards (warm-up), then one forward and one backward in turn, then the
//        remaining backwards (cool-down).
//  Interleaved: 1F1B over the m V (micro-batch, chunk) pairs, forwards going through the chunks
//        in groups of P micro-batches, backwards through them in reverse; warm-up
//        (P - rank - 1) * 2 + (V - 1) * P.
//  Zero bubble (ZB-H1, Qi et al. 2023): 1F1B's order of forwards and input-gradient backwards;
//        each weight-gradient pass is deferred into the time the rank would otherwise wait, and a
//        forward waits while P micro-batches hold activations on the rank (1F1B's peak, rank 0's),
//        the rest after the last backward. Placed by simulating unit-cost passes; for m >= P the
//        bubble is (P - 1) / (3 m), the paper's (P - 1)(F + B - W) at F = B = W.
std::vector<std::vector<PipeAction>> pipeline_actions(PipelineKind kind, const PipelineShape& shape);

// One point-to-point transfer of a pipeline: an activation going forward (to the next stage) or
// an input gradient going backward (to the previous one), of micro-batch `micro`, received by
// global stage `to_stage`.
struct PipeMessage {
  bool forward = true;  // activation (true) or gradient (false)
  int micro = 0;
  int to_stage = 0;
  bool operator==(const PipeMessage& o) const {
    return forward == o.forward && micro == o.micro && to_stage == o.to_stage;
  }
  std::string str() const;
};

struct PipeTransfer {
  bool send = true;  // send (true) or receive
  int peer = 0;      // pipeline rank of the other side
  PipeMessage message;
};

// A rank's program: before action i the rank posts group[i] (without waiting) and then, where
// wait[i], waits until everything it posted has completed; group[actions] and wait[actions]
// (true) end the step. Each forward or backward has one group: the sends of the previous forward
// or backward and its own receives, so both directions of a steady-state exchange go together
// (Megatron's send_forward_recv_backward); it is posted right after that previous pass and waited
// right before this one, so at most one group is in flight (NCCL runs a comm's groups in order)
// and the weight passes of zero-bubble run while it is. Under interleaving a forward and the
// backward after it share one group, after the backward (Megatron's pairing): with one group per
// pass the chunks' transfers wait on each other in a cycle.
//
// NCCL may hold back every transfer of a group until all of them have met their other side (a
// first transfer between two ranks connects them inside ncclGroupEnd, on the host, and NCCL does
// not promise that a group's transfers progress apart). So a group must not exchange with a peer
// what that peer exchanges in two groups of its own, the first of which it must complete before
// it posts the second: GPipe's last forward sends its activation and the first backward receives
// its gradient from the next stage, which receives that activation before its last forward and
// sends the gradient only after its first backward. Where a group would, sends_apart[i] is set:
// the sends go as one group and then the receives as another.
struct RankProgram {
  std::vector<PipeAction> actions;
  std::vector<std::vector<PipeTransfer>> groups;  // actions.size() + 1
  std::vector<bool> waits;                         // actions.size() + 1
  std::vector<bool> sends_apart;                   // actions.size() + 1
};
// The groups rank r posts in turn: groups[i], or where sends_apart[i] its sends and then its
// receives (empty groups left out), each with the slot i it is posted in.
struct PostedGroup {
  size_t slot = 0;
  std::vector<PipeTransfer> transfers;
};
std::vector<PostedGroup> posted_groups(const RankProgram& program);
std::vector<RankProgram> pipeline_programs(const std::vector<std::vector<PipeAction>>& actions,
                                           const PipelineShape& shape);

// The bubble of the schedule under Megatron's definition, (P - 1) / (V m): idle time over the
// ideal time of a step, for equal stages and a backward twice the forward.
double ideal_bubble_fraction(PipelineKind kind, const PipelineShape& shape);

}  // namespace nd::train
