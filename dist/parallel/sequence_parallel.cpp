// Sequence parallelism's mappings and gradient sum. reduce_scatter_for_tp and all_gather_for_tp
// are the single place where they meet a collective, as allreduce_for_tp is for tensor parallelism.
#include "dist/parallel/sequence_parallel.h"

#include <algorithm>
#include <memory>
#include <set>
#include <string>

#include "autograd/dispatch.h"
#include "autograd/ops.h"
#include "autograd/ops/split_linear.h"
#include "autograd/parallel_ops.h"
#include "autograd/without_forward.h"
#include "dist/comm/peer_memory.h"
#include "kernels/cpu/add.h"
#include "kernels/cuda/add.h"
#include "kernels/cuda/copy_many.h"
#include "tensor/op_timer.h"

namespace nd::dist {
namespace {

void check_blocks(const Tensor& whole, const Tensor& block, int tp, const char* what) {
  ND_CHECK(whole.dtype() == block.dtype() && whole.numel() == block.numel() * tp,
           what << ": " << whole.str() << " must hold " << tp << " blocks of " << block.str());
}

// `shape` with its token dimension (the one before the features) times `times` or over `over`.
Shape tokens_scaled(Shape shape, int64_t times, int64_t over) {
  int64_t& tokens = shape[shape.size() - 2];
  tokens = tokens * times / over;
  return shape;
}

// dst = src (same dtype and count, one device) queued on the compute stream: Tensor::copy_from
// waits on the host outside CUDA graph capture, hundreds of times per eager step here. add's
// backward with one destination written is the copy.
void copy_on_stream(const Tensor& dst, const Tensor& src) {
  ND_DISPATCH_KERNEL(src, "gradient copy",
                     backend::add_backward(src.data<scalar_t>(), GradDest<scalar_t>{dst.data<scalar_t>(), false},
                                           GradDest<scalar_t>{}, src.numel()));
}

// dsts[i] = srcs[i] for every i (same dtype and count, one device), queued on the compute stream:
// on the GPU in one launch per 128 tensors (sum_gradients_over_tp moves ~200 small gradients twice
// a step; a launch each was ~5 us of the critical path apiece), on the CPU one copy each.
void copy_each_on_stream(const std::vector<Tensor>& dsts, const std::vector<Tensor>& srcs) {
  if (srcs.empty()) return;
#if NANODIST_WITH_CUDA
  if (srcs.front().device().is_cuda()) {
    op_timer::Scope timed("gradient copies", srcs.front());
    std::vector<cuda::ByteCopy> copies;
    for (size_t i = 0; i < srcs.size(); ++i)
      copies.push_back({srcs[i].raw_data(), dsts[i].raw_data(), static_cast<int64_t>(srcs[i].nbytes())});
    cuda::copy_many(copies);
    return;
  }
#endif
  for (size_t i = 0; i < srcs.size(); ++i) copy_on_stream(dsts[i], srcs[i]);
}

}  // namespace

void reduce_scatter_for_tp(Comm& comm, const Tensor& input, Tensor& output) {
  check_blocks(input, output, comm.size(), "reduce_scatter_for_tp");
  comm.reduce_scatter(input, output, ReduceOp::Sum);
}

void all_gather_for_tp(Comm& comm, const Tensor& input, Tensor& output) {
  check_blocks(output, input, comm.size(), "all_gather_for_tp");
  comm.all_gather(input, output);
}

Variable all_gather_from_sp(const Variable& x, const TensorParallel& tp) {
  if (!tp.splits_tokens()) return x;
  ND_CHECK(x.data().ndim() >= 2, "all_gather_from_sp: x must be (..., T / tp, C), got " << x.data().str());
  Comm* comm = tp.comm;
  const Tensor& share = x.data();
  Tensor whole = Tensor::empty(tokens_scaled(share.shape(), tp.size(), 1), share.dtype(), share.device());
  all_gather_for_tp(*comm, share, whole);
  return make_result(whole, {x.without_data()}, [comm](const Tensor& grad_out, std::vector<Variable>& in) {
    if (!in[0].requires_grad()) return;
    Tensor grad_share =
        Tensor::empty(tokens_scaled(grad_out.shape(), 1, comm->size()), grad_out.dtype(), grad_out.device());
    reduce_scatter_for_tp(*comm, grad_out, grad_share);
    ops::pass_gradient(grad_share, in[0]);
  });
}

Variable reduce_scatter_to_sp(const Variable& x, const TensorParallel& tp) {
  if (!tp.splits_tokens()) return x;
  const Shape& whole = x.shape();  // x may have no value (recorded without its forward)
  ND_CHECK(whole.size() >= 2 && whole[whole.size() - 2] % tp.size() == 0,
           "reduce_scatter_to_sp: tensor-parallel size " << tp.size() << " does not divide the tokens of "
                                                         << shape_str(whole));
  Comm* comm = tp.comm;
  auto backward = [comm](const Tensor& grad_out, std::vector<Variable>& in) {
    if (!in[0].requires_grad()) return;
    Tensor grad_whole =
        Tensor::empty(tokens_scaled(grad_out.shape(), comm->size(), 1), grad_out.dtype(), grad_out.device());
    all_gather_for_tp(*comm, grad_out, grad_whole);
    ops::pass_gradient(grad_whole, in[0]);
  };
  const Shape share_shape = tokens_scaled(whole, 1, tp.size());
  // Without its forward (autograd/without_forward.h, on every rank alike) the reduce-scatter is
  // skipped; backward's all-gather runs as always.
  if (forward_skipped())
    return make_result_without_value({share_shape, x.dtype(), x.device()}, {x.without_data()}, backward);
  Tensor partial = x.data();
  Tensor share = Tensor::empty(share_shape, partial.dtype(), partial.device());
  reduce_scatter_for_tp(*tp.comm, partial, share);
  return make_result(share, {x.without_data()}, backward);
}

Variable enter_tp_region(const Variable& x, const TensorParallel& tp) {
  return tp.splits_tokens() ? all_gather_from_sp(x, tp) : copy_to_tp(x, tp);
}

Variable leave_tp_region(const Variable& x, const TensorParallel& tp) {
  return tp.splits_tokens() ? reduce_scatter_to_sp(x, tp) : reduce_from_tp(x, tp);
}

Variable token_dropout(const Variable& x, float p, Generator& gen, bool training, const TensorParallel& tp) {
  if (!tp.splits_tokens()) return ops::dropout(x, p, gen, training);
  const int64_t share = shape_numel(x.shape());  // tokens [rank S, (rank + 1) S) of the whole
  return ops::dropout_share(x, p, gen, training, share * tp.size(), share * tp.rank());
}

namespace {

std::function<void()> waiter(CommWork work) {
  auto shared = std::make_shared<CommWork>(work);
  return [shared] { shared->wait(); };
}

}  // namespace

ops::SplitCollectives split_collectives(const TensorParallel& tp, int chunks) {
  Comm* comm = tp.comm;
  ops::SplitCollectives c;
  c.ranks = tp.size();
  c.rank = tp.rank();
  c.chunks = chunks;
  c.gather = [comm](const Tensor& shard, Tensor& whole) {
    check_blocks(whole, shard, comm->size(), "all_gather_for_tp");
    return waiter(comm->all_gather_async(shard, whole));
  };
  c.gather_others = [comm](const Tensor& shard, Tensor& whole) {
    check_blocks(whole, shard, comm->size(), "all_gather_for_tp");
    return waiter(all_gather_others_async(*comm, shard, whole));
  };
  // The wholes come from the comm's scratch (over the copy engines: buffers the peers copy straight
  // into, with no copy out of a landing slot, an SM kernel that waits for the GEMM beside it).
  c.whole = [comm](const Shape& shape, DType dtype) { return gather_scratch(*comm, shape, dtype); };
  c.scatter = [comm](const Tensor& whole, Tensor& shard) {
    check_blocks(whole, shard, comm->size(), "reduce_scatter_for_tp");
    return waiter(comm->reduce_scatter_async(whole, shard, ReduceOp::Sum));
  };
  c.halves = [comm](const Tensor& shard) { return reduce_scatter_in_halves(*comm, shard, ReduceOp::Sum); };
  c.send = [comm](const Tensor& whole, Tensor& shard) -> std::function<ops::SplitCollectives::Wait()> {
    check_blocks(whole, shard, comm->size(), "reduce_scatter_for_tp");
    PeerMemory* peer = comm->peer_memory();  // asked by halves first
    const PeerMemory::ScatterTicket ticket = peer->reduce_scatter_send(whole, shard, ReduceOp::Sum);
    return [peer, ticket, whole, shard]() mutable {
      return waiter(peer->reduce_scatter_finish(ticket, whole, shard, ReduceOp::Sum));
    };
  };
  return c;
}

int split_chunks(bool overlap, int64_t share_bytes) {
  if (!overlap) return 0;
  constexpr int64_t kChunkBytes = int64_t{8} << 20;
  return static_cast<int>(std::clamp<int64_t>((share_bytes + kChunkBytes - 1) / kChunkBytes, 2, 8));
}

Variable gathered_column_linear(const Variable& x, const Variable& w, const Variable& b, const TensorParallel& tp,
                                bool gelu) {
  int chunks = split_chunks(tp.overlap, static_cast<int64_t>(x.data().nbytes()));
  // Over the copy engines (the comms whose reduce-scatter comes in halves: PeerComm's) one chunk:
  // the share's whole gather hides behind this rank's own block's GEMM, and the GEMMs stay whole
  // (measured faster than the size rule's two chunks there).
  if (chunks > 1 && reduce_scatter_in_halves(*tp.comm, x.data(), ReduceOp::Sum)) chunks = 1;
  return ops::gathered_linear(x, w, b, split_collectives(tp, chunks), gelu);
}

Variable scattered_row_linear(const Variable& x, const Variable& w, const TensorParallel& tp, const Variable& b) {
  const int64_t out_bytes = x.data().numel() / std::max<int64_t>(1, x.shape().back()) * w.shape()[0] *
                            static_cast<int64_t>(dtype_size(x.data().dtype())) / tp.size();
  const int chunks = split_chunks(tp.overlap, out_bytes);
  return ops::scattered_linear(x, w, split_collectives(tp, chunks), b);
}

void sum_gradients_over_tp(const std::vector<Variable>& params, const TensorParallel& tp) {
  if (!tp.active()) return;
  std::vector<Tensor> grads;
  for (const Variable& p : params)
    if (p.has_grad()) grads.push_back(p.grad());
  sum_gradients_over_tp(std::move(grads), tp);
}

void sum_gradients_over_tp(std::vector<Tensor> grads, const TensorParallel& tp) {
  if (!tp.active() || grads.empty()) return;
  int64_t total = 0;
  for (const Tensor& g : grads) {
    ND_CHECK(g.dtype() == grads.front().dtype(),
             "sum_gradients_over_tp: gradients of one dtype, got " << grads.front().str() << " and " << g.str());
    total += g.numel();
  }
  Tensor flat = Tensor::empty({total}, grads.front().dtype(), grads.front().device());
  std::vector<Tensor> slices, views;
  int64_t offset = 0;
  for (const Tensor& g : grads) {
    slices.push_back(flat.narrow(offset, g.numel()));
    views.push_back(g.view({-1}));
    offset += g.numel();
  }
  copy_each_on_stream(slices, views);
  allreduce_for_tp(*tp.comm, flat, ReduceOp::Sum);
  copy_each_on_stream(views, slices);
}

namespace {

// The names of `model`'s parameters that tensor parallelism splits (the others are replicated).
std::set<std::string> split_names(const nn::Module& model) {
  std::set<std::string> split;
  for (const auto& [name, info] : model.named_param_infos())
    if (info.split.sharded()) split.insert(name);
  return split;
}

}  // namespace

void sum_sequence_parallel_gradients(const nn::Module& model, const TensorParallel& tp) {
  if (!tp.splits_tokens()) return;
  const std::set<std::string> split = split_names(model);
  std::vector<Tensor> replicated;
  for (const auto& [name, p] : model.named_parameters())
    if (!split.count(name) && p.has_grad()) replicated.push_back(p.grad());
  sum_gradients_over_tp(std::move(replicated), tp);
}

void sum_sequence_parallel_gradients(const nn::Module& model, const TensorParallel& tp,
                                     const DataParallelEngine& engine, FlatParams& flat) {
  if (!tp.splits_tokens()) return;
  const std::set<std::string> split = split_names(model);
  std::vector<Tensor> replicated;
  for (const FlatEntry& e : flat.entries())
    if (!split.count(e.name))
      for (Tensor& piece : held_gradient(engine, flat, e)) replicated.push_back(std::move(piece));
  sum_gradients_over_tp(std::move(replicated), tp);
}

}  // namespace nd::dist
