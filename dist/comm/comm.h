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

// The collectives whose layout the ranks agree on (see Comm::agree_on_layout).
enum class Collective {
  AllReduce, ReduceScatter, AllGather, Broadcast, RingAllReduce, RingReduceScatter, RingAllGather,
  AllToAll, RingBroadcast, RingAllToAll, PeerAllReduce, PeerReduceScatter, PeerAllGather
};
const char* collective_name(Collective collective);

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
  // one dtype, or a bf16 input into an f32 output where reduce_scatter_widens(op) says so.
  virtual CommWork reduce_scatter_async(const Tensor& input, Tensor& output, ReduceOp op) = 0;
  // Whether reduce_scatter_async takes a bf16 input into an f32 output of this device (the same
  // answer on every rank): the result has the bits of the f32 reduce-scatter of the input widened
  // first, with half its bytes moved and no widened copy. Where not, a caller widens first.
  virtual bool reduce_scatter_widens(ReduceOp) { return false; }
  // reduce_scatter_async that adds its result into `output` instead of overwriting it: output (n,
  // f32) += the reduction of block rank() over all ranks (input size() * n, f32 or bf16), the sum
  // over ranks formed and scaled first and added with one rounding, so the bits are those of
  // reduce-scattering into a temporary and adding that. ZeRO's later micro-batches go straight into
  // the f32 gradient shard this way, with no landing place beside the staging buffer and no pass to
  // add it in. reduce_scatter_accumulates says whether this comm takes `in` into `out` with `op`
  // (the same answer on every rank); only then may a caller use the call, which else fails.
  virtual bool reduce_scatter_accumulates(ReduceOp, DType /*in*/, DType /*out*/) { return false; }
  virtual CommWork reduce_scatter_accumulate_async(const Tensor& input, Tensor& output, ReduceOp op);
  // input (n), output (size() * n): block r of output = input of rank r.
  virtual CommWork all_gather_async(const Tensor& input, Tensor& output) = 0;
  // all_gather_async for a caller that keeps its own block elsewhere: block rank() of output need
  // not be written (a backend may write it anyway; PeerComm's copy engines leave it alone, which
  // saves a copy within the GPU that would take SMs from the GEMMs beside it).
  virtual CommWork all_gather_others_async(const Tensor& input, Tensor& output) {
    return all_gather_async(input, output);
  }
  // A zeroed tensor on this comm's device that this comm's collectives may write into directly on
  // every rank. Collective: every rank calls it in the same order with the same shape and dtype.
  // PeerComm registers it with its peers, so that an all-gather into it (at the same place on
  // every rank) copies each block straight into place, with no landing slot to copy out of. For
  // every other backend a plain tensor.
  virtual Tensor shared_tensor(const Shape& shape, DType dtype) { return Tensor::zeros(shape, dtype, device()); }
  // Whether `t` is a shared_tensor() this comm's all-gathers copy into in place, leaving the own
  // block of all_gather_others_async alone (the same answer on every rank); else they write it.
  virtual bool shares(const Tensor&) const { return false; }
  // A tensor for an all-gather's output that is read only while the work queued just after the
  // gather runs (a sequence-parallel linear's gathered input or output gradient). PeerComm hands
  // out one of a few shared_tensor() buffers that no tensor views any more, so that the copy engines
  // move each block straight into place; otherwise (and when none is free) a plain tensor. Every
  // rank calls it in the same order with the same shape and dtype.
  virtual Tensor gather_scratch(const Shape& shape, DType dtype) { return Tensor::empty(shape, dtype, device()); }
  virtual CommWork broadcast_async(Tensor& buffer, int root) = 0;
  // input (size() * n), output (size() * n), any dtype: block q of output on rank r = block r of
  // input on rank q (the transpose of the blocks over ranks). input and output must not overlap.
  virtual CommWork all_to_all_async(const Tensor& input, Tensor& output) = 0;

  // The reduce-scatter in two halves, where a backend's transfers take no SM (PeerComm's copy
  // engines) and a caller can compute this rank's own block of `input` while the others move.
  // reduce_scatter_in_halves says whether the backend has them for an `output` block of this size,
  // dtype and op (the same answer on every rank); only then may a caller use them:
  // reduce_scatter_send starts moving every block of `input` but block rank() (ordered after the
  // compute queued so far, like any collective; block rank() need not be computed yet) and returns
  // a ticket; reduce_scatter_finish, called next on this comm with the same buffers once block
  // rank() is queued on the compute stream, reduces into `output` and returns the work. A backend
  // without them fails both.
  struct ScatterTicket {
    int slot = -1;
  };
  virtual bool reduce_scatter_in_halves(const Tensor&, ReduceOp) { return false; }
  virtual ScatterTicket reduce_scatter_send(const Tensor& input, const Tensor& output, ReduceOp op);
  virtual CommWork reduce_scatter_finish(const ScatterTicket& ticket, const Tensor& input, Tensor& output,
                                         ReduceOp op);

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

  // The contract's two halves for a collective built from send/recv: order_after_compute()
  // before its first transfer, record_work() after its last (no-ops on host backends).
  virtual void order_after_compute() {}
  virtual CommWork record_work() { return CommWork(); }
  // Copies `src` into `dst` (same dtype and element count, on this comm's device) in call order
  // with this comm's transfers, like a point-to-point call: on the GPU on the comm's stream, on
  // host backends at once. Raw material for collectives built from send/recv (dist/comm/ring_comm.h).
  virtual void stream_copy(Tensor& dst, const Tensor& src);

  // Backends fail alike: raises nd::Error on every rank unless all ranks call the same
  // collective with the same element count (of `buffer`), dtype and `detail` (reduce op, root;
  // for the ring collectives op + 16 * (pipes + 16 * pipe CTAs), dist/comm/ring_allreduce.cpp).
  // The agreement is one small host allreduce, held the first time this rank calls a layout on
  // this comm; later calls with a layout it has already agreed on skip it (nothing per step).
  // Caught, on every rank: a disagreement where every rank is at a layout new to it (ranks with
  // different batch or model sizes, dtypes, reduce ops or roots, or calling different
  // collectives). Not caught: a rank at a layout it has already agreed on while another is at a
  // new one (the first skips the agreement, the second waits in it: NCCL hangs; MPI pairs the
  // agreement with the collective, a hang or an MPI error); point-to-point counts on NCCL (MPI
  // reports a short recv); calls in a different order with agreed layouts; buffer contents; a
  // local argument check (device, dtype, shapes) that fails on one rank only: it raises alone.
  void agree_on_layout(Collective collective, const Tensor& buffer, int detail);

 private:
  std::set<std::array<int64_t, 4>> agreed_layouts_;  // (collective, detail, count, dtype)
};

// Common argument checks: defined, on the comm's device, dtype one of f32/bf16 (plus i32 and
// the rest for data movement only).
void check_comm_buffer(const Comm& comm, const Tensor& buffer, const char* what);
void check_reducible(const Tensor& buffer, const char* what);
void check_peer(const Comm& comm, int peer, const char* what);
// all_to_all's arguments: both on the comm's device, same dtype, same count, a multiple of size().
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
