// dist::Comm: the communicator interface every distributed piece talks to. Backends: MpiComm
// (CPU buffers), NcclComm (GPU buffers, each comm on a stream of its own), LocalComm (one
// rank); RingComm (dist/comm/ring_comm.h) decorates any of them with our ring collectives. Buffers
// are contiguous nd::Tensors; all ranks must call collectives in the same order.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace nd::dist {

// Max: f32 on MPI and NCCL (the row maxima of the vocabulary-parallel cross-entropy); the ring
// all-reduce takes only Sum and Avg.
enum class ReduceOp { Sum, Avg, Max };
const char* reduce_op_name(ReduceOp op);
// The factor a sum over `ranks` ranks is scaled by, once, to give `op`: 1 / ranks for Avg, else 1.
inline float reduce_scale(ReduceOp op, int ranks) {
  return op == ReduceOp::Avg ? 1.0f / static_cast<float>(ranks) : 1.0f;
}

// Reductions for small host-side values (sizes, flags, timings): always blocking, on the host.
enum class HostReduce { Sum, Max };

// How a collective runs: the backend's own (NCCL on GPU, MPI on CPU); our ring, flat or in two
// levels (ring_comm.h, hierarchical_comm.h); over GPU peer memory (peer_comm.h): one-shot, two-shot,
// push, `peer` (one-shot, then two-shot by size) and `auto` (by size from a table timed at start).
enum class Algorithm { Native, Ring, Hierarchical, OneShot, TwoShot, Push, Peer, Auto };
// native | ring | hierarchical | oneshot | twoshot | push | peer | auto; anything else raises.
Algorithm parse_algorithm(const std::string& name);
const char* algorithm_name(Algorithm algorithm);

// The collectives whose layout the ranks agree on (see Comm::agree_on_layout).
enum class CollectiveOp { AllReduce, ReduceScatter, AllGather, Broadcast, AllToAll };
const char* collective_op_name(CollectiveOp op);

class PeerMemory;

// The ordering contract, the same for every backend and for collectives built on send/recv
// (the ring). The caller never touches streams:
//  1. Inputs: a collective reads its buffers after all work already queued on the device's
//     compute stream (nd::compute_stream). On the GPU the comm stream waits for an event of the
//     compute stream; on the host the caller's CPU kernels have already finished.
//  2. Results: an `_async` call returns a CommWork. After work.wait() returns, work queued on the
//     compute stream sees the result (GPU: the compute stream waits for an event recorded right
//     after the collective; the host does not wait). Until then neither read nor write the
//     buffers from compute work. The plain forms are `_async(...).wait()`.
//  3. Between themselves, the collectives and point-to-point groups of one comm run in call
//     order, so a collective may consume an earlier one's result on the same comm without a
//     wait. Different comms are not ordered against each other: every NcclComm (and every
//     split) has its own stream, so a tensor-parallel all-reduce never queues behind a
//     data-parallel bucket. A collective that consumes another comm's result needs that
//     result's wait() first (the compute stream then orders the two, by rule 1).
//  4. Nothing here waits on the host for the GPU: only stream work and events, so a step that
//     uses it can be captured as a CUDA graph. (Before capture, run the step once eagerly: the
//     first use of a layout holds a host agreement with the other ranks, and the GPU ring and
//     RingComm grow their staging buffers with a host sync.) Rule 1 forks each comm's stream into
//     a capture and wait() joins it back, so every CommWork of a captured step must be waited
//     before the capture ends. For the host, use synchronize().
// Overlap, as in DDP: launch with `_async` while compute goes on and wait() only where the
// result is needed. Point-to-point calls are the raw material of collectives and stay outside
// the contract: they run on the comm stream in call order; code that builds a collective from
// them brackets it with order_after_compute() and record_work() (dist/comm/ring_allreduce.cpp).
// Decorators (dist/comm/ring_comm.h) wrap a Comm and keep its stream and its contract.
class [[nodiscard]] CommWork {
 public:
  CommWork() = default;  // already complete (host backends finish before they return)
  // GPU backends: complete once `cuda_event` (a cudaEvent_t recorded on the comm's stream, on
  // device `device`) has fired.
  CommWork(void* cuda_event, int device) : event_(cuda_event), device_(device) {}
  // Orders later compute-stream work after the collective (GPU), without blocking the host.
  void wait();

 private:
  void* event_ = nullptr;
  int device_ = -1;
};

class Comm {
 public:
  virtual ~Comm() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual Device device() const = 0;         // where this comm's buffers must live
  virtual const char* backend() const = 0;   // "local", "mpi" or "nccl"

  // Point-to-point. Inside group_start()/group_end() the operations are posted together when
  // the group ends, so a ring step (send to next, recv from prev) never deadlocks. Outside a
  // group each call is its own group. Both sides must agree on the element count.
  virtual void send(const Tensor& buffer, int peer) = 0;
  virtual void recv(Tensor& buffer, int peer) = 0;
  virtual void group_start() = 0;
  // Ends a group. On return the transfers are complete (MPI) or ordered before any later work
  // on the comm's stream (NCCL).
  void group_end() {
    post_group();
    wait_posted();
  }
  // The two halves of group_end(), for pipelining: post_group() starts the grouped transfers and
  // returns; wait_posted() completes every posted transfer. Leave the buffers alone in between.
  virtual void post_group() = 0;
  virtual void wait_posted() = 0;

  // Native collectives (MPI or NCCL), ordered by the contract above. In place for allreduce and
  // broadcast.
  virtual CommWork allreduce_async(Tensor& buffer, ReduceOp op) = 0;
  // input (size() * n), output (n): output on rank r = reduction of block r over all ranks. Of
  // one dtype, or a bf16 input into an f32 output where PeerMemory::reduce_scatter_widens says so.
  virtual CommWork reduce_scatter_async(const Tensor& input, Tensor& output, ReduceOp op) = 0;
  // input (n), output (size() * n): block r of output = input of rank r.
  virtual CommWork all_gather_async(const Tensor& input, Tensor& output) = 0;
  virtual CommWork broadcast_async(Tensor& buffer, int root) = 0;
  // input (size() * n), output (size() * n), any dtype: block q of output on rank r = block r of
  // input on rank q (the transpose of the blocks over ranks). input and output must not overlap.
  virtual CommWork all_to_all_async(const Tensor& input, Tensor& output) = 0;

  void allreduce(Tensor& buffer, ReduceOp op) { allreduce_async(buffer, op).wait(); }
  void reduce_scatter(const Tensor& input, Tensor& output, ReduceOp op) {
    reduce_scatter_async(input, output, op).wait();
  }
  void all_gather(const Tensor& input, Tensor& output) { all_gather_async(input, output).wait(); }
  void broadcast(Tensor& buffer, int root) { broadcast_async(buffer, root).wait(); }
  void all_to_all(const Tensor& input, Tensor& output) { all_to_all_async(input, output).wait(); }

  // Every rank has reached the barrier and all its work on this comm has finished.
  virtual void barrier() = 0;
  // Ranks with the same color form a new comm, ordered by (key, old rank). Collective.
  virtual std::unique_ptr<Comm> split(int color, int key) = 0;

  // Waits on the host until every operation issued on this comm has finished.
  virtual void synchronize() = 0;
  // In-place reduction of n host values over all ranks (blocking).
  virtual void host_allreduce(int64_t* values, int n, HostReduce op) = 0;
  virtual void host_allreduce(double* values, int n, HostReduce op) = 0;

  // Fault handling (dist/parallel/fault_guard.h), called from the watchdog thread while the main thread
  // may be blocked inside this comm: an asynchronous error the backend has seen ("" = none), and
  // an abort that makes in-flight operations give up. By default there is neither (MPI: the
  // process ends and the launcher ends the others).
  virtual std::string async_error() { return ""; }
  virtual void abort() {}

  // The extra powers of a backend whose GPUs share memory (dist/comm/peer_memory.h), or nullptr:
  // callers that can use them ask; decorators that replace the collectives (the ring) have none.
  virtual PeerMemory* peer_memory() { return nullptr; }

  // The contract's two halves for a collective built from send/recv: order_after_compute()
  // before its first transfer, record_work() after its last (no-ops on host backends).
  virtual void order_after_compute() {}
  virtual CommWork record_work() { return CommWork(); }
  // Copies `src` into `dst` (same dtype and element count, on this comm's device) in call order
  // with this comm's transfers, like a point-to-point call: on the GPU on the comm's stream, on
  // host backends at once. Raw material for collectives built from send/recv (dist/comm/ring_comm.h).
  virtual void stream_copy(Tensor& dst, const Tensor& src);

  // Backends fail alike: raises nd::Error on every rank unless all ranks call the same collective
  // with the same algorithm, element count, dtype and `detail` (reduce op or root). One small host
  // allreduce the first time this rank calls a layout on this comm, none after. It catches ranks
  // that all meet a new layout (different sizes, dtypes, ops, roots or collectives); not a rank at
  // an agreed layout beside one at a new layout (NCCL hangs), point-to-point counts on NCCL,
  // reordered calls, or a local argument check that fails on one rank only.
  void agree_on_layout(CollectiveOp op, Algorithm algorithm, const Tensor& buffer, int detail);

 private:
  std::set<std::array<int64_t, 4>> agreed_layouts_;  // (op and algorithm, detail, count, dtype)
};

// Common argument checks: defined, on the comm's device, dtype one of f32/bf16 (plus i32 and
// the rest for data movement only).
void check_comm_buffer(const Comm& comm, const Tensor& buffer, const char* what);
void check_reducible(const Tensor& buffer, const char* what);
void check_peer(const Comm& comm, int peer, const char* what);
// The collectives' arguments: both on the comm's device, one dtype; reduce_scatter's input and
// all_gather's output size() times the other; all_to_all's of one count, a multiple of size().
void check_reduce_scatter(const Comm& comm, const Tensor& input, const Tensor& output);
void check_all_gather(const Comm& comm, const Tensor& input, const Tensor& output);
void check_all_to_all(const Comm& comm, const Tensor& input, const Tensor& output);

// The smallest and the largest of a value over the ranks: what checks that every rank passes the
// same one get, in one small host reduction for all their values (the max of each value and of its
// negation). Collective over `comm`.
struct RankRange {
  int64_t min = 0, max = 0;
  bool same() const { return min == max; }
};
std::vector<RankRange> ranges_over_ranks(Comm& comm, const std::vector<int64_t>& values);

}  // namespace nd::dist
