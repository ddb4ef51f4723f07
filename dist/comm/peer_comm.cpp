// PeerComm (peer_comm.h): agreeing on peer access, registering and exchanging the buffers through
// CUDA IPC handles over the host channel, the choice by size (fixed, or auto from the table
// PeerOptions::decide made), and the launch: one kernel on the comm's stream (it copies the input in itself).
#include "dist/comm/peer_comm.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>

#include "dist/comm/peer_ipc.h"
#include "dist/comm/ring_comm.h"
#include "dist/comm/tracing_comm.h"
#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>

#include "dist/comm/nccl_comm.h"
#include "kernels/cuda/peer_allreduce.h"
#include "tensor/cuda_check.h"
#include "tensor/cuda_stream.h"
#endif

namespace nd::dist {

bool is_peer_choice(Algorithm algorithm) {
  return algorithm == Algorithm::OneShot || algorithm == Algorithm::TwoShot || algorithm == Algorithm::Push;
}

namespace {
// Push's receive area holds whole chunks (kernels/cuda/peer_allreduce.h): enough for the smaller
// of push_max_bytes and the buffer.
int64_t push_bytes(const PeerOptions& options) {
  return std::max<int64_t>(0, std::min(options.push_max_bytes, options.buffer_bytes));
}

// Whether the device's compute stream is being captured into a CUDA graph (nothing may talk to
// the peers on the host then).
bool capturing(int device) {
#if NANODIST_WITH_CUDA
  return compute_stream_capturing(device);
#else
  (void)device;
  return false;
#endif
}
}  // namespace

#if NANODIST_WITH_CUDA
struct PeerComm::Registration {
  int device = 0;
  void* own = nullptr;          // cudaMalloc'd: kPeerFlagBytes of flags, two data slots, push's receive area
  std::vector<void*> opened;    // the peers' regions mapped here (nullptr at this rank)
  uint32_t* epochs = nullptr;   // device, kPeerMaxBlocks counters
  uint32_t* push_epochs = nullptr;  // device, one counter per push chunk
  cuda::PeerTimeout* timeout = nullptr;  // host-mapped
  cuda::PeerBuffers buffers;
  cudaStream_t stream = nullptr;

  // A peer may still read this rank's slot of the last call after this rank's kernel ended, so
  // PeerComm's destructor holds a host barrier first. Not checked: a destructor must not throw.
  ~Registration() {
    cudaSetDevice(device);
    close_peer_regions(opened);
    if (own) cudaFree(own);
    if (epochs) cudaFree(epochs);
    if (push_epochs) cudaFree(push_epochs);
    if (timeout) cudaFreeHost(timeout);
  }
};
#else
struct PeerComm::Registration {};
#endif

PeerComm::PeerComm(Comm& inner, const PeerOptions& options) : ForwardingComm(inner), options_(options) { set_up(); }

PeerComm::PeerComm(std::unique_ptr<Comm> inner, const PeerOptions& options)
    : ForwardingComm(std::move(inner)), options_(options) {
  set_up();
}

PeerComm::~PeerComm() {
  if (!registration_) return;
  try {
    inner_.synchronize();
    int64_t done = 1;
    inner_.host_allreduce(&done, 1, HostReduce::Sum);  // every rank's kernels have finished
  } catch (...) {
  }
}

void PeerComm::set_up() {
  ND_CHECK(is_peer_choice(options_.mode) || options_.mode == Algorithm::Peer || options_.mode == Algorithm::Auto,
           "peer all-reduce: the mode must be oneshot, twoshot, peer, push or auto, not "
               << algorithm_name(options_.mode));
  ND_CHECK(options_.buffer_bytes >= 16 && options_.buffer_bytes % 16 == 0,
           "peer all-reduce: the buffer (" << options_.buffer_bytes << " bytes) must be a positive multiple of 16");
  ND_CHECK(options_.push_max_bytes >= 0, "peer all-reduce: push_max_bytes must be >= 0, got " << options_.push_max_bytes);
  ND_CHECK(options_.timeout_s > 0, "peer all-reduce: the timeout must be positive, got " << options_.timeout_s);
  ring_ = std::make_unique<RingComm>(inner_, options_.ring);
  const int n = size(), r = rank();
  unusable_reason_ = "no CUDA in this build";
  copy_unusable_reason_ = "no peer memory";
  if (n == 1) {
    unusable_reason_ = "one rank";
    return;
  }
#if NANODIST_WITH_CUDA
  // Under a TracingComm (--trace) or another decorator, the NCCL comm whose stream runs the work.
  auto* nccl = find_below<NcclComm>(inner_);
  // Every rank's node (a hash of the host name), GPU and whether it can take part, then every
  // rank's verdict on peer access to every other: all decide alike.
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const int64_t host_hash = static_cast<int64_t>(std::hash<std::string>()(host) >> 2);
  std::vector<int64_t> info(3 * n, 0);
  info[r] = host_hash;
  info[n + r] = nccl ? nccl->device().index + 1 : 0;
  info[2 * n + r] = nccl && n <= cuda::kPeerMaxRanks ? 1 : 0;
  inner_.host_allreduce(info.data(), 3 * n, HostReduce::Sum);
  std::string reason;
  for (int q = 0; q < n && reason.empty(); ++q) {
    if (info[2 * n + q] == 0) reason = nccl ? "more than 8 ranks" : "not an NCCL comm";
    else if (info[q] != info[0]) reason = "ranks on more than one node";
    for (int p = 0; p < q && reason.empty(); ++p)
      if (info[n + p] == info[n + q]) reason = "two ranks share a GPU";
  }
  int64_t failed = 0;
  if (reason.empty()) {
    for (int q = 0; q < n; ++q) {
      if (q == r) continue;
      int can = 0;
      CUDA_CHECK(cudaDeviceCanAccessPeer(&can, nccl->device().index, static_cast<int>(info[n + q] - 1)));
      if (!can) failed = 1;
    }
    inner_.host_allreduce(&failed, 1, HostReduce::Max);
    if (failed) reason = "no peer access between some GPUs (cudaDeviceCanAccessPeer)";
  }
  if (!reason.empty()) {
    unusable_reason_ = reason;
    return;
  }
  auto reg = std::make_unique<Registration>();
  reg->device = nccl->device().index;
  reg->stream = nccl->stream();
  CUDA_CHECK(cudaSetDevice(reg->device));
  const int64_t push_chunks = (push_bytes(options_) + cuda::kPeerPushChunkBytes - 1) / cuda::kPeerPushChunkBytes;
  const size_t slots = 2 * static_cast<size_t>(options_.buffer_bytes);
  const size_t push_area = static_cast<size_t>(cuda::peer_push_area_bytes(n, push_chunks));
  CUDA_CHECK(cudaMalloc(&reg->own, cuda::kPeerFlagBytes + slots + push_area));
  CUDA_CHECK(cudaMemset(reg->own, 0, cuda::kPeerFlagBytes));
  // Zero flags in the push area: the first calls await flags 1 and 2.
  if (push_area > 0) CUDA_CHECK(cudaMemset(static_cast<char*>(reg->own) + cuda::kPeerFlagBytes + slots, 0, push_area));
  CUDA_CHECK(cudaMalloc(&reg->epochs, cuda::kPeerMaxBlocks * sizeof(uint32_t)));
  CUDA_CHECK(cudaMemset(reg->epochs, 0, cuda::kPeerMaxBlocks * sizeof(uint32_t)));
  CUDA_CHECK(cudaMalloc(&reg->push_epochs, std::max<int64_t>(1, push_chunks) * sizeof(uint32_t)));
  CUDA_CHECK(cudaMemset(reg->push_epochs, 0, std::max<int64_t>(1, push_chunks) * sizeof(uint32_t)));
  CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&reg->timeout), sizeof(cuda::PeerTimeout), cudaHostAllocMapped));
  std::memset(reinterpret_cast<void*>(reg->timeout), 0, sizeof(cuda::PeerTimeout));
  if (!open_peer_regions(inner_, reg->own, reg->opened)) {
    unusable_reason_ = "cudaIpcOpenMemHandle failed on some rank";
    return;  // reg's destructor closes what was opened
  }
  cuda::PeerBuffers& b = reg->buffers;
  b.rank = r;
  b.nranks = n;
  b.epochs = reg->epochs;
  b.slot_bytes = options_.buffer_bytes;
  b.push_chunks = push_chunks;
  b.push_epochs = reg->push_epochs;
  CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&b.timeout), reinterpret_cast<void*>(reg->timeout), 0));
  for (int q = 0; q < n; ++q) {
    char* region = static_cast<char*>(q == r ? reg->own : reg->opened[q]);
    b.flags[q] = reinterpret_cast<uint32_t*>(region);
    b.data[q] = region + cuda::kPeerFlagBytes;
    b.push[q] = region + cuda::kPeerFlagBytes + slots;
  }
  registration_ = std::move(reg);
  unusable_reason_.clear();
  copy_unusable_reason_ = "off (copy_block_bytes 0)";
  if (options_.copy_block_bytes > 0)
    copy_ = PeerCopy::create(inner_, registration_->device, registration_->stream, options_.copy_block_bytes,
                             &copy_unusable_reason_);
  if (copy_) copy_unusable_reason_.clear();
  if (options_.mode == Algorithm::Auto && options_.decide) auto_table_ = options_.decide(*this);
#endif
}

CommWork PeerComm::on_track(const char* what, int64_t bytes, const std::function<void()>& work) {
  const auto call = [&] {
    inner_.order_after_compute();
    work();
    return inner_.record_work();
  };
  if (auto* traced = dynamic_cast<TracingComm*>(&inner_)) return traced->traced_call(what, bytes, call);
  return call();
}

bool PeerComm::peer_fits(const Tensor& buffer, ReduceOp op) const {
  if (!registration_ || op == ReduceOp::Max) return false;
  if (buffer.dtype() != DType::F32 && buffer.dtype() != DType::BF16) return false;
  if (buffer.device() != device() || static_cast<int64_t>(buffer.nbytes()) > options_.buffer_bytes) return false;
  return (reinterpret_cast<uintptr_t>(buffer.raw_data()) & 15) == 0;
}

Algorithm PeerComm::choice(int64_t bytes) const {
  switch (options_.mode) {
    case Algorithm::Peer: return bytes <= options_.one_shot_max_bytes ? Algorithm::OneShot : Algorithm::TwoShot;
    case Algorithm::Auto: break;
    default: return options_.mode;  // oneshot, twoshot or push (set_up checked)
  }
  for (const auto& [largest, c] : auto_table_)
    if (bytes <= largest) return c;
  return auto_table_.empty() ? Algorithm::Native : auto_table_.back().second;
}

int64_t PeerComm::largest_bytes(Algorithm choice) const {
  if (choice == Algorithm::Push) return push_bytes(options_);
  return is_peer_choice(choice) ? options_.buffer_bytes : std::numeric_limits<int64_t>::max();
}

CommWork PeerComm::allreduce_async(Tensor& buffer, ReduceOp op) {
  check_comm_buffer(*this, buffer, "allreduce buffer");
  if (options_.mode == Algorithm::Auto && op != ReduceOp::Max)
    return allreduce_with(choice(static_cast<int64_t>(buffer.nbytes())), buffer, op);
  if (!peer_fits(buffer, op)) return inner_.allreduce_async(buffer, op);
  return allreduce_with(choice(static_cast<int64_t>(buffer.nbytes())), buffer, op);
}

CommWork PeerComm::allreduce_with(Algorithm choice, Tensor& buffer, ReduceOp op) {
  if (choice == Algorithm::Ring) return ring_->allreduce_async(buffer, op);
  if (!is_peer_choice(choice) || !peer_fits(buffer, op) || static_cast<int64_t>(buffer.nbytes()) > largest_bytes(choice))
    return inner_.allreduce_async(buffer, op);
#if NANODIST_WITH_CUDA
  check_comm_buffer(*this, buffer, "allreduce buffer");
  const cuda::PeerAlgo algo = choice == Algorithm::OneShot   ? cuda::PeerAlgo::OneShot
                              : choice == Algorithm::TwoShot ? cuda::PeerAlgo::TwoShot
                                                             : cuda::PeerAlgo::Push;
  inner_.agree_on_layout(CollectiveOp::AllReduce, choice, buffer, static_cast<int>(op));
  return on_track("allreduce", static_cast<int64_t>(buffer.nbytes()), [&] {
    Registration& reg = *registration_;
    if (buffer.numel() > 0) {
      const float scale = reduce_scale(op, size());
      const auto timeout_ns = static_cast<uint64_t>(options_.timeout_s * 1e9);
      if (buffer.dtype() == DType::F32) {
        cuda::peer_allreduce(reg.buffers, buffer.data<float>(), buffer.numel(), scale, algo, timeout_ns, reg.stream);
      } else {
        cuda::peer_allreduce(reg.buffers, buffer.data<bf16>(), buffer.numel(), scale, algo, timeout_ns, reg.stream);
      }
    }
  });
#else
  return inner_.allreduce_async(buffer, op);
#endif
}

bool PeerComm::copy_reduces(const Tensor& output, ReduceOp op) const {
  return copy_ && op != ReduceOp::Max && (output.dtype() == DType::F32 || output.dtype() == DType::BF16);
}

bool PeerComm::reduce_scatter_in_halves(const Tensor& output, ReduceOp op) {
  return copy_reduces(output, op) && copy_->fits(output);
}

bool PeerComm::reduce_scatter_widens(ReduceOp op) { return copy_ && op != ReduceOp::Max; }

bool PeerComm::reduce_scatter_accumulates(ReduceOp op, DType in, DType out) {
  if (!copy_ || op == ReduceOp::Max || out != DType::F32) return false;
  return in == DType::F32 || (in == DType::BF16 && reduce_scatter_widens(op));
}

bool PeerComm::copy_takes_scatter(const Tensor& input, const Tensor& output, ReduceOp op) {
  const bool widens = input.dtype() == DType::BF16 && output.dtype() == DType::F32;
  ND_CHECK(input.dtype() == output.dtype() || (widens && reduce_scatter_widens(op) && copy_->on_device(output)),
           "reduce_scatter: input " << input.str() << " into output " << output.str()
                                    << ": of one dtype, or bf16 into f32 on the copy engines (reduce_scatter_widens)");
  if (!copy_reduces(output, op) || !copy_->on_device(output) || input.device() != output.device()) return false;
  check_comm_buffer(*this, input, "reduce_scatter input");
  check_comm_buffer(*this, output, "reduce_scatter output");
  inner_.agree_on_layout(CollectiveOp::ReduceScatter, Algorithm::Peer, input, static_cast<int>(op));
  return true;
}

CommWork PeerComm::reduce_scatter_async(const Tensor& input, Tensor& output, ReduceOp op) {
  if (!copy_takes_scatter(input, output, op)) return inner_.reduce_scatter_async(input, output, op);
  return on_track("reduce_scatter", static_cast<int64_t>(input.nbytes()),
                  [&] { copy_->reduce_scatter(input, output, reduce_scale(op, size())); });
}

CommWork PeerComm::reduce_scatter_accumulate_async(const Tensor& input, Tensor& output, ReduceOp op) {
  // Not on the copy engines (a host tensor, another device): an error, never a plain reduce-scatter
  // that would overwrite the sum so far.
  ND_CHECK(reduce_scatter_accumulates(op, input.dtype(), output.dtype()) && copy_takes_scatter(input, output, op),
           "reduce_scatter_accumulate: not on the copy engines (" << input.str() << " into " << output.str() << " with "
                                                                   << reduce_op_name(op)
                                                                   << "; ask reduce_scatter_accumulates first)");
  return on_track("reduce_scatter_accumulate", static_cast<int64_t>(input.nbytes()),
                  [&] { copy_->reduce_scatter(input, output, reduce_scale(op, size()), /*accumulate=*/true); });
}

PeerMemory::ScatterTicket PeerComm::reduce_scatter_send(const Tensor& input, const Tensor& output, ReduceOp op) {
  ND_CHECK(input.dtype() == output.dtype() && reduce_scatter_in_halves(output, op) &&
               copy_takes_scatter(input, output, op),
           "reduce_scatter_send: not on the copy engines (" << input.str() << " -> " << output.str()
                                                             << "; ask reduce_scatter_in_halves first)");
  ScatterTicket ticket;
  // The send's own work needs no wait: the finish's, later on the same stream, covers it.
  (void)on_track("reduce_scatter send", static_cast<int64_t>(input.nbytes()),
                 [&] { ticket.slot = copy_->send_blocks(input, static_cast<int64_t>(output.nbytes())); });
  return ticket;
}

CommWork PeerComm::reduce_scatter_finish(const ScatterTicket& ticket, const Tensor& input, Tensor& output,
                                         ReduceOp op) {
  ND_CHECK(ticket.slot >= 0 && copy_, "reduce_scatter_finish: no send before it");
  return on_track("reduce_scatter finish", static_cast<int64_t>(input.nbytes()),
                  [&] { copy_->finish_reduce_scatter(ticket.slot, input, output, reduce_scale(op, size())); });
}

CommWork PeerComm::gather(const Tensor& input, Tensor& output, bool own_block) {
  if (!copy_ || !copy_->on_device(input) || input.device() != output.device()) return inner_.all_gather_async(input, output);
  check_comm_buffer(*this, input, "all_gather input");
  check_comm_buffer(*this, output, "all_gather output");
  const int shared = copy_->shared_index(output);
  // The shared buffer's number is part of the layout: a rank whose buffer is gone (or was never
  // shared) would otherwise take the slots while its peers copy into its memory.
  inner_.agree_on_layout(CollectiveOp::AllGather, Algorithm::Peer, input, shared + 1);
  return on_track("all_gather", static_cast<int64_t>(output.nbytes()), [&] {
    if (shared >= 0)
      copy_->all_gather_shared(shared, input, output, own_block);
    else
      copy_->all_gather(input, output);
  });
}

CommWork PeerComm::all_gather_async(const Tensor& input, Tensor& output) { return gather(input, output, true); }

CommWork PeerComm::all_gather_others_async(const Tensor& input, Tensor& output) {
  return gather(input, output, false);
}

Tensor PeerComm::shared_tensor(const Shape& shape, DType dtype) {
  if (!copy_) return Tensor::zeros(shape, dtype, device());
  Tensor t = Tensor::zeros(shape, dtype, device());
  if (t.numel() > 0) copy_->share(t);
  return t;
}

Tensor PeerComm::gather_scratch(const Shape& shape, DType dtype) {
  if (!copy_) return Tensor::empty(shape, dtype, device());
  const int64_t n = shape_numel(shape);
  for (const Tensor& t : gather_scratch_)
    if (t.storage().use_count() == 1 && t.dtype() == dtype && t.numel() == n) return t.view(shape);
  if (gather_scratch_.size() < kGatherScratch && !capturing(device().index)) {
    Tensor t = shared_tensor({n}, dtype);
    if (shares(t)) {
      gather_scratch_.push_back(t);
      return t.view(shape);
    }
  }
  return Tensor::empty(shape, dtype, device());
}

std::unique_ptr<Comm> PeerComm::split(int color, int key) {
  return std::make_unique<PeerComm>(inner_.split(color, key), options_);
}

std::string PeerComm::async_error() {
#if NANODIST_WITH_CUDA
  if (registration_ && registration_->timeout->set) {
    const cuda::PeerTimeout& t = *registration_->timeout;
    static const char* phases[] = {"start flags of block", "middle flags of block", "push data of chunk"};
    return "peer all-reduce: rank " + std::to_string(rank()) + " waited more than " +
           std::to_string(options_.timeout_s) + " s for rank " + std::to_string(t.peer) + " at the " +
           phases[t.phase % 3] + " " + std::to_string(t.block) +
           " (a rank stopped calling, or the ranks call all-reduces in different orders)";
  }
#endif
  return inner_.async_error();
}

}  // namespace nd::dist
