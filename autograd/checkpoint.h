// Activation recomputation: a region of ops whose activations autograd does not keep. The forward
// runs the region without recording; the one node it leaves keeps only the region's input, and when
// the output's gradient arrives it reruns the region with recording and backpropagates through the
// rerun (Megatron's and PyTorch's activation checkpointing). Implementation: autograd/checkpoint.cpp.
#pragma once
#include <functional>
#include <vector>

#include "autograd/variable.h"
#include "tensor/random.h"

namespace nd::ops {

// A region: x -> its output, drawing any dropout masks from `gen`. It may read x, leaves (the
// parameters) and constants, but no other op output: its rerun must not reach outside the region.
using Region = std::function<Variable(const Variable& x, Generator& gen)>;
// A region told whether its output's value is read: the forward reads it; the rerun does not, as
// backward needs only the rerun's graph. There the region may record the ops whose values only feed
// its output without their forward (autograd/without_forward.h), skipping their work: nn::Block's
// MLP output projection, its dropout and the residual add. Their nodes, and so the gradients, are
// those of a full rerun; the random counters they draw must be too.
using TailSkippingRegion = std::function<Variable(const Variable& x, Generator& gen, bool output_read)>;

// region(x, gen), its intermediate activations freed at once and recomputed in backward. The rerun
// starts from a copy of `gen` as the forward found it, so every dropout draws the same Philox
// counters (anchored draws too: a CUDA graph's replay reads the same anchor in both), and it calls
// the region's collectives again (tensor and sequence parallelism), in the same order on every
// rank since every rank runs the same backward. Same kernels in the same order: the gradients equal
// the recorded region's bit for bit on a device whose kernels are deterministic.
// `params` lists every leaf that requires grad the region reads: the engine counts the region as
// one use of each, so their hooks (the data-parallel buckets) fire once, after the rerun's backward.
// Without recording (grad mode off, or neither x nor any param requires grad) this is region(x, gen).
// Backward must run in grad mode (the rerun records), which the engine's default is.
Variable checkpoint(const Region& region, const Variable& x, const std::vector<Variable>& params, Generator& gen);
// The same for a region that skips its tail in the rerun (output_read false there, true otherwise).
Variable checkpoint(const TailSkippingRegion& region, const Variable& x, const std::vector<Variable>& params,
                    Generator& gen);

}  // namespace nd::ops
