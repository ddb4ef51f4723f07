// Parameters and gradients as views into flat buffers, one per model (Megatron's param-and-grad
// buffer, llm.c's single params_memory): a data-parallel bucket is a contiguous range of the
// gradient buffer, one broadcast moves every parameter, the optimizer's state lives in the same
// layout (train/optimizer.h), and a ZeRO shard is a range that may cut across tensors.
// Layout: the parameters in reverse registration order (backward finishes the last ones first,
// so buckets fill front to back), each at a 4096-byte boundary (a page: direct I/O of checkpoints);
// the padding between them is zero and stays zero.
// Gradients: backward writes into views of backward_grads() (the parameters' dtype). With a
// gradient dtype wider than the parameters' (--grad-dtype f32 under bf16, Megatron's main_grad)
// a second buffer, grads(), accumulates the micro-batches in f32 and is what data parallelism
// reduces and the optimizer reads; otherwise grads() is backward_grads() itself.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "autograd/variable.h"

namespace nd::dist {

// Where each tensor starts in the flat buffers: a page, so an asynchronous checkpoint writes each
// tensor to disk by direct I/O straight from the buffer (train/ckpt/direct_write.h).
constexpr int64_t kFlatAlignBytes = 4096;

struct FlatEntry {
  std::string name;
  Variable param;
  int64_t offset = 0;  // element offset, the same in every flat buffer of the layout
  int64_t numel = 0;
};

// One slice of the flat buffers a rank owns under ZeRO (dist/parallel/data_parallel.h): elements
// [begin, begin + length) of the layout, stored at `local` in the shard-sized buffers (the
// gradient shard, AdamW's m, v and masters).
struct ShardSlice {
  int64_t begin = 0, length = 0, local = 0;
};

// A maximal run of layout entries [first, last) of one unit (FlatOptions::units), at elements
// [begin, begin + length) of the flat buffers, both multiples of shards x the alignment.
struct FlatSegment {
  size_t first = 0, last = 0;
  int64_t begin = 0, length = 0;
  int unit = -1;
};

struct FlatOptions {
  // The buffers' length is padded to a multiple of shards x the alignment, so ZeRO can cut them
  // into that many aligned equal parts (dist/parallel/gradient_buckets.h).
  int shards = 1;
  // One unit id per parameter (registration order), empty = none: each maximal run of one unit in
  // the layout becomes a segment padded to shards x the alignment at both ends, so ZeRO 2 and 3
  // can stage or gather a unit (a transformer block, dist/parallel/unit_hooks.h) on its own. -1: a
  // parameter outside every block (embeddings, final LayerNorm); another negative id: outside the
  // blocks too, in a segment of its own (a tensor that other layouts hold too, as the pipeline's
  // tied embedding, is then cut into the same shard slices by each of them).
  std::vector<int> units;
  // false (ZeRO 2 and 3): no full-size gradient buffers; the data-parallel engine binds each
  // parameter's gradient to a staging buffer of its own (grads() and backward_grads() undefined).
  bool full_grads = true;
};

class FlatParams {
 public:
  // `params` in registration (forward) order, defined, one dtype and one device. Their values are
  // copied in and each becomes a view of params(); gradients a parameter already holds are
  // carried over, the others start as "no gradient yet" (the first contribution overwrites).
  // grad_dtype: the parameters' dtype, or F32 (an f32 accumulation buffer beside bf16 ones).
  // shards: the buffers' length is padded to a multiple of shards x the alignment, so ZeRO can cut
  // them into that many aligned equal parts (dist/parallel/gradient_buckets.h).
  FlatParams(const std::vector<std::pair<std::string, Variable>>& params, DType grad_dtype, int shards = 1);
  FlatParams(const std::vector<std::pair<std::string, Variable>>& params, DType grad_dtype, const FlatOptions& options);
  FlatParams(const FlatParams&) = delete;
  FlatParams& operator=(const FlatParams&) = delete;

  const std::vector<FlatEntry>& entries() const { return entries_; }  // layout order
  // The units' segments in layout order (one segment of unit -1 over everything without units).
  const std::vector<FlatSegment>& segments() const { return segments_; }
  bool full_grads() const { return grads_.defined(); }
  int64_t numel() const { return numel_; }  // with padding
  int64_t alignment() const;  // elements of the parameters' dtype in one aligned unit (4096 bytes)
  DType param_dtype() const { return param_dtype_; }
  DType grad_dtype() const { return grad_dtype_; }
  Device device() const { return device_; }
  bool separate_grads() const { return separate_; }

  Tensor& params() { return params_; }
  // ZeRO 3: drops the full-size parameter buffer once the data-parallel engine keeps the
  // parameters elsewhere (its shard and gathered buffers); params() is undefined after.
  void release_params() { params_ = Tensor(); }
  Tensor& grads() { return grads_; }
  Tensor& backward_grads() { return separate_ ? backward_grads_ : grads_; }
  // Entry `e`'s view of a flat buffer of this layout (any dtype), shaped like its parameter.
  Tensor view_of(const Tensor& flat, const FlatEntry& e) const;
  Tensor grad_of(const FlatEntry& e) { return view_of(grads_, e); }

  // Starts a step: every gradient becomes "no contribution yet" (no memory is touched).
  void zero_grad();
  // Entries [first, last) (a contiguous run of the layout) are final for this micro-batch. With
  // separate grads: backward's gradients are added into grads() (overwriting them when
  // `overwrite`, the run's first accumulation of the step) and backward's buffers are marked
  // empty for the next micro-batch. An entry without a contribution counts as zero, and without
  // separate grads is filled with zeros, so a reduction never reads a stale gradient.
  void accumulate(size_t first, size_t last, bool overwrite);
  // Whether entry `e` holds a gradient for this step (a contribution since zero_grad(), or a
  // zero filled in by accumulate or a read of the gradient).
  bool has_gradient(size_t e) const;

 private:
  std::vector<FlatEntry> entries_;
  std::vector<FlatSegment> segments_;
  int64_t numel_ = 0;
  DType grad_dtype_ = DType::F32, param_dtype_ = DType::F32;
  Device device_;
  bool separate_ = false;
  Tensor params_, grads_, backward_grads_;
  std::vector<char> accumulated_;  // separate grads: entry accumulated since zero_grad()
};

// dst (f32) = or += src (f32 or bf16), both on one device, in compute-stream order: how
// micro-batch gradients reach f32 main gradients or a ZeRO gradient shard.
void accumulate_into_f32(const Tensor& src, Tensor& dst, bool overwrite);
// dst = src (same dtype and element count, one device) in compute-stream order, the host not
// waiting (Tensor::copy_from waits outside graph capture).
void copy_in_stream_order(const Tensor& src, Tensor& dst);

}  // namespace nd::dist
