// dist::Comm: the communicator interface every distributed piece talks to. Backends: MpiComm
// (CPU buffers), NcclComm (GPU buffers, ordered on the comm's CUDA stream), LocalComm (one rank).
// Buffers are contiguous nd::Tensors; all ranks must call collectives in the same order.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "tensor/tensor.h"

namespace nd::dist {

enum class ReduceOp { Sum, Avg };
ReduceOp parse_reduce_op(const std::string& name);  // "sum" | "avg"
const char* reduce_op_name(ReduceOp op);

// Reductions for small host-side values (sizes, flags, timings): always blocking, on the host.
enum class HostReduce { Sum, Max };

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

  // Native collectives (MPI or NCCL). In place for allreduce and broadcast.
  virtual void allreduce(Tensor& buffer, ReduceOp op) = 0;
  // input (size() * n), output (n): output on rank r = reduction of block r over all ranks.
  virtual void reduce_scatter(const Tensor& input, Tensor& output, ReduceOp op) = 0;
  // input (n), output (size() * n): block r of output = input of rank r.
  virtual void all_gather(const Tensor& input, Tensor& output) = 0;
  virtual void broadcast(Tensor& buffer, int root) = 0;
  // Every rank has reached the barrier and all its work on this comm has finished.
  virtual void barrier() = 0;
  // Ranks with the same color form a new comm, ordered by (key, old rank). Collective.
  virtual std::unique_ptr<Comm> split(int color, int key) = 0;

  // Waits on the host until every operation issued on this comm has finished.
  virtual void synchronize() = 0;
  // In-place reduction of n host values over all ranks (blocking).
  virtual void host_allreduce(int64_t* values, int n, HostReduce op) = 0;
  virtual void host_allreduce(double* values, int n, HostReduce op) = 0;

  // Fault handling (dist/fault_guard.h), called from the watchdog thread while the main thread
  // may be blocked inside this comm: an asynchronous error the backend has seen ("" = none), and
  // an abort that makes in-flight operations give up. By default there is neither (MPI: the
  // process ends and the launcher ends the others).
  virtual std::string async_error() { return ""; }
  virtual void abort() {}
};

// Raises nd::Error on every rank unless all ranks pass the same element count and dtype for
// `what`: one small host allreduce, so a mismatch is an error instead of a hang.
void check_same_buffer_on_all_ranks(Comm& comm, const Tensor& buffer, const char* what);

// Common argument checks: defined, on the comm's device, dtype one of f32/bf16 (plus i32 and
// the rest for data movement only).
void check_comm_buffer(const Comm& comm, const Tensor& buffer, const char* what);
void check_reducible(const Tensor& buffer, const char* what);
void check_peer(const Comm& comm, int peer, const char* what);

}  // namespace nd::dist
