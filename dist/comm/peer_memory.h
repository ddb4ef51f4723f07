// PeerMemory: what a backend whose GPUs share memory can do beyond the standard collectives
// (PeerComm: the copy engines move blocks straight into peer memory, taking no SM from the GEMMs).
// Comm::peer_memory() returns it or nullptr; the functions at the end give the standard answer
// where there is none. Every rank gets the same answers from the same calls.
#pragma once
#include "dist/comm/comm.h"

namespace nd::dist {

class PeerMemory {
 public:
  virtual ~PeerMemory() = default;

  // Whether reduce_scatter_async takes a bf16 input into an f32 output: the bits of the f32
  // reduce-scatter of the widened input, with half the bytes moved and no widened copy.
  virtual bool reduce_scatter_widens(ReduceOp op) = 0;
  // Whether reduce_scatter_accumulate_async takes `in` into `out` with `op`; only then may a caller
  // use it, which otherwise fails.
  virtual bool reduce_scatter_accumulates(ReduceOp op, DType in, DType out) = 0;
  // reduce_scatter_async that adds into `output` (n, f32) instead of overwriting it, with the bits
  // of reduce-scattering into a temporary and adding that (input size() * n, f32 or bf16). ZeRO's
  // later micro-batches go straight into the f32 gradient shard this way.
  virtual CommWork reduce_scatter_accumulate_async(const Tensor& input, Tensor& output, ReduceOp op) = 0;

  // all_gather_async for a caller that keeps its own block elsewhere: block rank() of output may be
  // left alone (a copy within the GPU would take SMs from the GEMMs beside it).
  virtual CommWork all_gather_others_async(const Tensor& input, Tensor& output) = 0;
  // A zeroed tensor, registered with the peers, that all-gathers write into directly on every rank.
  // Collective: every rank calls it in the same order with the same shape and dtype.
  virtual Tensor shared_tensor(const Shape& shape, DType dtype) = 0;
  // Whether `t` is a shared_tensor() the all-gathers copy into in place, leaving the own block of
  // all_gather_others_async alone; else they write it.
  virtual bool shares(const Tensor& t) const = 0;
  // An all-gather output read only by the work queued right after the gather (a sequence-parallel
  // linear's gathered input or output gradient): a free shared buffer, else a plain tensor. Every
  // rank calls it in the same order with the same shape and dtype.
  virtual Tensor gather_scratch(const Shape& shape, DType dtype) = 0;

  // The reduce-scatter in two halves, so a caller can compute its own block of `input` while the
  // others move (where reduce_scatter_in_halves says so): reduce_scatter_send moves every block but
  // block rank(); reduce_scatter_finish, next on this comm with the same buffers once block rank()
  // is queued, reduces into `output`.
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
