// PeerMemory: what a backend whose GPUs share memory can do beyond the standard collectives
// (PeerComm, dist/comm/peer_comm.h: the copy engines move blocks straight into peer memory and take
// no SM from the GEMMs beside them). Comm::peer_memory() returns it, or nullptr; the callers (the
// data-parallel engines, the sequence-parallel linears) ask, and the functions at the end give the
// standard answer where there is none. Every rank gets the same answers from the same calls.
#pragma once
#include "dist/comm/comm.h"

namespace nd::dist {

class PeerMemory {
 public:
  virtual ~PeerMemory() = default;

  // Whether reduce_scatter_async takes a bf16 input into an f32 output of this device: the result
  // has the bits of the f32 reduce-scatter of the input widened first, with half its bytes moved
  // and no widened copy.
  virtual bool reduce_scatter_widens(ReduceOp op) = 0;
  // Whether reduce_scatter_accumulate_async takes `in` into `out` with `op`; only then may a caller
  // use it, which otherwise fails.
  virtual bool reduce_scatter_accumulates(ReduceOp op, DType in, DType out) = 0;
  // reduce_scatter_async that adds its result into `output` instead of overwriting it: output (n,
  // f32) += the reduction of block rank() over all ranks (input size() * n, f32 or bf16), the sum
  // over ranks formed and scaled first and added with one rounding, so the bits are those of
  // reduce-scattering into a temporary and adding that. ZeRO's later micro-batches go straight into
  // the f32 gradient shard this way, with no landing place beside the staging buffer.
  virtual CommWork reduce_scatter_accumulate_async(const Tensor& input, Tensor& output, ReduceOp op) = 0;

  // all_gather_async for a caller that keeps its own block elsewhere: block rank() of output need
  // not be written (the copy engines leave it alone, which saves a copy within the GPU that would
  // take SMs from the GEMMs beside it).
  virtual CommWork all_gather_others_async(const Tensor& input, Tensor& output) = 0;
  // A zeroed tensor on the comm's device that the all-gathers may write into directly on every rank
  // (registered with the peers, so that an all-gather into it, at the same place on every rank,
  // copies each block straight into place). Collective: every rank calls it in the same order with
  // the same shape and dtype.
  virtual Tensor shared_tensor(const Shape& shape, DType dtype) = 0;
  // Whether `t` is a shared_tensor() the all-gathers copy into in place, leaving the own block of
  // all_gather_others_async alone; else they write it.
  virtual bool shares(const Tensor& t) const = 0;
  // A tensor for an all-gather's output that is read only while the work queued just after the
  // gather runs (a sequence-parallel linear's gathered input or output gradient): one of a few
  // shared buffers that no tensor views any more, else (none free) a plain tensor. Every rank calls
  // it in the same order with the same shape and dtype.
  virtual Tensor gather_scratch(const Shape& shape, DType dtype) = 0;

  // The reduce-scatter in two halves, so that a caller can compute this rank's own block of `input`
  // while the others move. reduce_scatter_in_halves says whether they take an `output` block of this
  // size, dtype and op; only then may a caller use them: reduce_scatter_send starts moving every
  // block of `input` but block rank() (ordered after the compute queued so far, like any
  // collective; block rank() need not be computed yet) and returns a ticket; reduce_scatter_finish,
  // called next on this comm with the same buffers once block rank() is queued on the compute
  // stream, reduces into `output` and returns the work.
  struct ScatterTicket {
    int slot = -1;
  };
  virtual bool reduce_scatter_in_halves(const Tensor& output, ReduceOp op) = 0;
  virtual ScatterTicket reduce_scatter_send(const Tensor& input, const Tensor& output, ReduceOp op) = 0;
  virtual CommWork reduce_scatter_finish(const ScatterTicket& ticket, const Tensor& input, Tensor& output,
                                         ReduceOp op) = 0;
};

// The answers for any comm: its peer memory's where it has one, else the standard collectives'.
bool reduce_scatter_widens(Comm& comm, ReduceOp op);                            // false
bool reduce_scatter_accumulates(Comm& comm, ReduceOp op, DType in, DType out);  // false
bool reduce_scatter_in_halves(Comm& comm, const Tensor& output, ReduceOp op);   // false
CommWork all_gather_others_async(Comm& comm, const Tensor& input, Tensor& output);  // all_gather_async
Tensor shared_tensor(Comm& comm, const Shape& shape, DType dtype);                 // Tensor::zeros
bool shares(Comm& comm, const Tensor& t);                                          // false
Tensor gather_scratch(Comm& comm, const Shape& shape, DType dtype);                // Tensor::empty

}  // namespace nd::dist
