// PeerCopy (peer_copy.h): the registered slots, the flags' stream memory operations (the driver's
// entry points, found through the runtime so that nothing links libcuda and a CPU machine still
// runs the binaries), and the two collectives as copies between the flags.
#include "dist/comm/peer_copy.h"

#include <algorithm>
#include <string>

#include "dist/comm/peer_ipc.h"
#if NANODIST_WITH_CUDA
#include <cuda.h>
#include <cuda_runtime.h>

#include "kernels/cuda/sum_blocks.h"
#include "tensor/cuda_check.h"
#endif

namespace nd::dist {

#if NANODIST_WITH_CUDA
namespace {

constexpr int kMaxRanks = cuda::kSumBlocksMax;
// Bytes at the front of a region: full[kSlots][kMaxRanks], then free[kSlots][kMaxRanks], then
// granted[kShared][kMaxRanks] and landed[kShared][kMaxRanks], uint32.
constexpr size_t kFlagBytes = 4096;
static_assert(2 * (PeerCopy::kSlots + PeerCopy::kShared) * kMaxRanks * sizeof(uint32_t) <= kFlagBytes, "flags fit");

using StreamValue32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

struct MemOps {
  StreamValue32 write = nullptr;
  StreamValue32 wait = nullptr;
};

StreamValue32 driver_entry(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<StreamValue32>(fn);
}

const MemOps& mem_ops() {
  static const MemOps ops{driver_entry("cuStreamWriteValue32"), driver_entry("cuStreamWaitValue32")};
  return ops;
}

void write_flag(void* stream, uint32_t* flag, uint32_t value) {
  // The v2 write is preceded by a memory fence: the copies queued before it are visible first.
  const CUresult r = mem_ops().write(static_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(flag), value, 0);
  ND_CHECK(r == CUDA_SUCCESS, "copy-engine collective: cuStreamWriteValue32 failed (CUresult " << r << ")");
}

// Waits on `stream` until a peer has set `flag` (1), then clears it for its next use: every flag
// has one waiter, the rank whose memory holds it.
void take_flag(void* stream, uint32_t* flag) {
  const CUresult r =
      mem_ops().wait(static_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(flag), 1, CU_STREAM_WAIT_VALUE_EQ);
  ND_CHECK(r == CUDA_SUCCESS, "copy-engine collective: cuStreamWaitValue32 failed (CUresult " << r << ")");
  write_flag(stream, flag, 0);
}

void copy_bytes(void* dst, const void* src, int64_t bytes, void* stream) {
  CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice,
                             static_cast<cudaStream_t>(stream)));
}

}  // namespace

std::unique_ptr<PeerCopy> PeerCopy::create(Comm& host, int device, void* stream, int64_t block_bytes,
                                           std::string* why) {
  ND_CHECK(block_bytes > 0 && block_bytes % 256 == 0,
           "copy-engine collectives: the block size must be a positive multiple of 256, got " << block_bytes);
  int64_t unusable = 0;
  if (host.size() > kMaxRanks) unusable = 1;
  else if (!mem_ops().write || !mem_ops().wait) unusable = 2;
  host.host_allreduce(&unusable, 1, HostReduce::Max);
  if (unusable) {
    *why = unusable == 1 ? "more than 8 ranks" : "no stream memory operations in this driver";
    return nullptr;
  }
  std::unique_ptr<PeerCopy> copy(new PeerCopy(host, device, stream, block_bytes));
  if (!open_peer_regions(host, copy->own_, copy->opened_)) {
    *why = "cudaIpcOpenMemHandle failed on some rank";
    return nullptr;
  }
  copy->regions_.resize(copy->ranks_);
  for (int q = 0; q < copy->ranks_; ++q)
    copy->regions_[q] = static_cast<char*>(q == copy->rank_ ? copy->own_ : copy->opened_[q]);
  return copy;
}

PeerCopy::PeerCopy(Comm& host, int device, void* stream, int64_t block_bytes)
    : rank_(host.rank()), ranks_(host.size()), device_(device), stream_(stream), block_bytes_(block_bytes),
      host_(&host) {
  CUDA_CHECK(cudaSetDevice(device_));
  const size_t data = static_cast<size_t>(kSlots) * ranks_ * static_cast<size_t>(block_bytes_);
  CUDA_CHECK(cudaMalloc(&own_, kFlagBytes + data));
  // full = 0 (nothing arrived), free = 1 (every peer's slot may be written).
  std::vector<uint32_t> flags(kFlagBytes / sizeof(uint32_t), 0);
  for (int i = 0; i < kSlots * kMaxRanks; ++i) flags[kSlots * kMaxRanks + i] = 1;
  CUDA_CHECK(cudaMemcpy(own_, flags.data(), kFlagBytes, cudaMemcpyHostToDevice));
  int priority = 0;
  CUDA_CHECK(cudaStreamGetPriority(static_cast<cudaStream_t>(stream_), &priority));
  CUDA_CHECK(cudaStreamCreateWithPriority(reinterpret_cast<cudaStream_t*>(&side_stream_), cudaStreamNonBlocking, priority));
  CUDA_CHECK(cudaStreamCreateWithPriority(reinterpret_cast<cudaStream_t*>(&push_stream_), cudaStreamNonBlocking, priority));
  CUDA_CHECK(cudaEventCreateWithFlags(reinterpret_cast<cudaEvent_t*>(&fork_), cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreateWithFlags(reinterpret_cast<cudaEvent_t*>(&join_), cudaEventDisableTiming));
}

PeerCopy::~PeerCopy() {
  // The owner (PeerComm) holds a host barrier after synchronising first: no peer copies from or
  // into these regions any more. Not checked: a destructor must not throw.
  cudaSetDevice(device_);
  close_peer_regions(opened_);
  for (Shared& b : shared_) close_peer_regions(b.opened);
  if (own_) cudaFree(own_);
  if (fork_) cudaEventDestroy(static_cast<cudaEvent_t>(fork_));
  if (join_) cudaEventDestroy(static_cast<cudaEvent_t>(join_));
  if (side_stream_) cudaStreamDestroy(static_cast<cudaStream_t>(side_stream_));
  if (push_stream_) cudaStreamDestroy(static_cast<cudaStream_t>(push_stream_));
}

uint32_t* PeerCopy::full(int owner, int slot, int sender) const {
  return reinterpret_cast<uint32_t*>(regions_[owner]) + slot * kMaxRanks + sender;
}

uint32_t* PeerCopy::free_flag(int owner, int slot, int receiver) const {
  return reinterpret_cast<uint32_t*>(regions_[owner]) + kSlots * kMaxRanks + slot * kMaxRanks + receiver;
}

uint32_t* PeerCopy::granted(int owner, int index, int receiver) const {
  return reinterpret_cast<uint32_t*>(regions_[owner]) + 2 * kSlots * kMaxRanks + index * kMaxRanks + receiver;
}

uint32_t* PeerCopy::landed(int owner, int index, int sender) const {
  return reinterpret_cast<uint32_t*>(regions_[owner]) + (2 * kSlots + kShared) * kMaxRanks + index * kMaxRanks + sender;
}

char* PeerCopy::block(int owner, int slot, int sender) const {
  return regions_[owner] + kFlagBytes + (static_cast<size_t>(slot) * ranks_ + sender) * block_bytes_;
}

bool PeerCopy::on_device(const Tensor& block) const {
  return block.device().is_cuda() && block.device().index == device_;
}

bool PeerCopy::fits(const Tensor& block) const {
  return on_device(block) && static_cast<int64_t>(block.nbytes()) <= block_bytes_;
}

void PeerCopy::push_to_peers(int slot, const std::vector<const void*>& blocks, int64_t bytes, void* stream) {
  for (int k = 1; k < ranks_; ++k) {
    const int q = (rank_ + k) % ranks_;
    take_flag(stream, free_flag(rank_, slot, q));
    copy_bytes(block(q, slot, rank_), blocks[q], bytes, stream);
    write_flag(stream, full(q, slot, rank_), 1);
  }
}

void PeerCopy::fork_to(void* side) {
  CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(fork_), static_cast<cudaStream_t>(stream_)));
  CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(side), static_cast<cudaEvent_t>(fork_), 0));
}

void PeerCopy::join_from(void* side) {
  CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(join_), static_cast<cudaStream_t>(side)));
  CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream_), static_cast<cudaEvent_t>(join_), 0));
}

void* PeerCopy::push_stream_for(int64_t bytes) const {
  return bytes > block_bytes_ ? push_stream_ : stream_;
}

void PeerCopy::await_peers(int slot) {
  for (int k = 1; k < ranks_; ++k) {
    const int q = (rank_ + ranks_ - k) % ranks_;
    take_flag(stream_, full(rank_, slot, q));
  }
}

void PeerCopy::release_peers(int slot) {
  for (int k = 1; k < ranks_; ++k) write_flag(stream_, free_flag((rank_ + ranks_ - k) % ranks_, slot, rank_), 1);
}

void PeerCopy::all_gather(const Tensor& input, Tensor& output) {
  ND_CHECK(on_device(input) && output.dtype() == input.dtype() && output.numel() == input.numel() * ranks_ &&
               output.device() == input.device(),
           "copy-engine all-gather: output " << output.str() << " must hold " << ranks_ << " blocks of input "
                                             << input.str());
  const int64_t bytes = static_cast<int64_t>(input.nbytes());
  if (bytes == 0) return;
  const char* in = static_cast<const char*>(input.raw_data());
  char* out = static_cast<char*>(output.raw_data());
  fork_to(side_stream_);
  copy_bytes(out + rank_ * bytes, in, bytes, side_stream_);
  move_in_pieces(
      bytes, [&](int64_t at) { return std::vector<const void*>(ranks_, in + at); },
      [&](int slot, int64_t at, int64_t piece) {
        for (int q = 0; q < ranks_; ++q)
          if (q != rank_) copy_bytes(out + q * bytes + at, block(rank_, slot, q), piece, stream_);
      });
  join_from(side_stream_);
}

bool PeerCopy::share(const Tensor& buffer) {
  if (shared_.size() >= static_cast<size_t>(kShared)) return false;  // the same count on every rank
  ND_CHECK(on_device(buffer) && buffer.storage() && buffer.raw_data() == buffer.storage()->data(),
           "copy-engine collectives: a shared buffer must be a whole allocation on cuda:" << device_ << ", got "
                                                                                   << buffer.str());
  const int64_t bytes = static_cast<int64_t>(buffer.storage()->nbytes());
  ND_CHECK(ranges_over_ranks(*host_, {bytes}).front().same(),
           "copy-engine collectives: a shared buffer of " << bytes << " bytes here, of another size on another rank");
  Shared b;
  b.storage = buffer.storage();
  b.base = static_cast<char*>(buffer.storage()->data());
  ND_CHECK(open_peer_regions(*host_, b.base, b.opened), "copy-engine collectives: cudaIpcOpenMemHandle of a shared "
                                                        "buffer failed on some rank");
  shared_.push_back(std::move(b));
  return true;
}

int PeerCopy::shared_index(const Tensor& output) const {
  if (!output.storage()) return -1;
  for (size_t i = 0; i < shared_.size(); ++i)
    if (shared_[i].storage.lock() == output.storage()) return static_cast<int>(i);
  return -1;
}

void PeerCopy::all_gather_shared(int index, const Tensor& input, Tensor& output, bool own_block) {
  ND_CHECK(index >= 0 && static_cast<size_t>(index) < shared_.size() && on_device(input) &&
               output.dtype() == input.dtype() && output.numel() == input.numel() * ranks_ &&
               shared_index(output) == index,
           "copy-engine all-gather into shared buffer " << index << ": output " << output.str() << " must hold "
                                                        << ranks_ << " blocks of input " << input.str()
                                                        << " inside it");
  const int64_t bytes = static_cast<int64_t>(input.nbytes());
  if (bytes == 0) return;
  const Shared& b = shared_[static_cast<size_t>(index)];
  const int64_t at = static_cast<const char*>(output.raw_data()) - b.base + rank_ * bytes;
  const char* in = static_cast<const char*>(input.raw_data());
  if (own_block) {
    fork_to(side_stream_);
    copy_bytes(b.base + at, in, bytes, side_stream_);
  }
  // This stream waited for the compute queued before the call: the buffer's earlier readers here
  // are done, so every peer may write its block now.
  for (int k = 1; k < ranks_; ++k) write_flag(stream_, granted((rank_ + ranks_ - k) % ranks_, index, rank_), 1);
  for (int k = 1; k < ranks_; ++k) {
    const int q = (rank_ + k) % ranks_;
    take_flag(stream_, granted(rank_, index, q));
    copy_bytes(static_cast<char*>(b.opened[q]) + at, in, bytes, stream_);
    write_flag(stream_, landed(q, index, rank_), 1);
  }
  for (int k = 1; k < ranks_; ++k) {
    const int q = (rank_ + ranks_ - k) % ranks_;
    take_flag(stream_, landed(rank_, index, q));
  }
  if (own_block) join_from(side_stream_);
}

int PeerCopy::take_slot() {
  const int slot = next_slot_;
  next_slot_ = (next_slot_ + 1) % kSlots;
  return slot;
}

void PeerCopy::move_in_pieces(int64_t bytes, const std::function<std::vector<const void*>(int64_t at)>& blocks_at,
                              const std::function<void(int slot, int64_t at, int64_t piece)>& consume) {
  // A block larger than a slot moves in slot-sized pieces, each through the next slot; their pushes
  // run ahead on a stream of their own (up to kSlots pieces, as the free flags allow) while this
  // stream takes the pieces that arrived.
  void* push = push_stream_for(bytes);
  if (push != stream_) fork_to(push);
  for (int64_t at = 0; at < bytes; at += block_bytes_) {
    const int64_t piece = std::min(block_bytes_, bytes - at);
    const int slot = take_slot();
    push_to_peers(slot, blocks_at(at), piece, push);
    await_peers(slot);
    consume(slot, at, piece);
    release_peers(slot);
  }
  if (push != stream_) join_from(push);
}

template <typename TIn, typename TOut>
void PeerCopy::sum_arrived(int slot, const void* own, void* out, int64_t count, float scale, bool accumulate) const {
  const TIn* sources[cuda::kSumBlocksMax] = {};
  for (int q = 0; q < ranks_; ++q)
    sources[q] = static_cast<const TIn*>(q == rank_ ? own : static_cast<const void*>(block(rank_, slot, q)));
  cuda::sum_blocks(sources, ranks_, static_cast<TOut*>(out), count, scale, accumulate,
                   static_cast<cudaStream_t>(stream_));
}

void PeerCopy::sum_piece(int slot, const void* own, void* out, int64_t piece, DType in, DType out_dtype,
                         float scale, bool accumulate) const {
  const int64_t count = piece / static_cast<int64_t>(dtype_size(in));
  if (in == DType::F32) sum_arrived<float, float>(slot, own, out, count, scale, accumulate);
  else if (out_dtype == DType::F32) sum_arrived<bf16, float>(slot, own, out, count, scale, accumulate);
  else sum_arrived<bf16, bf16>(slot, own, out, count, scale, accumulate);
}

void PeerCopy::reduce_scatter(const Tensor& input, Tensor& output, float scale, bool accumulate) {
  check_scatter(input, output);
  ND_CHECK(!accumulate || output.dtype() == DType::F32,
           "copy-engine reduce-scatter: accumulates into f32 only, got " << output.str());
  // Bytes of one rank's block as sent (the input's dtype) and as stored (the output's: wider where
  // a bf16 input lands in f32).
  const int64_t bytes = output.numel() * static_cast<int64_t>(dtype_size(input.dtype()));
  const int64_t widen = static_cast<int64_t>(dtype_size(output.dtype()) / dtype_size(input.dtype()));
  if (bytes == 0) return;
  const char* in = static_cast<const char*>(input.raw_data());
  char* out = static_cast<char*>(output.raw_data());
  // Pieces of whole elements (block_bytes_ is a multiple of 256), each summed as it lands.
  move_in_pieces(
      bytes,
      [&](int64_t at) {
        std::vector<const void*> blocks(ranks_);
        for (int q = 0; q < ranks_; ++q) blocks[q] = in + q * bytes + at;
        return blocks;
      },
      [&](int slot, int64_t at, int64_t piece) {
        sum_piece(slot, in + rank_ * bytes + at, out + at * widen, piece, input.dtype(), output.dtype(), scale,
                  accumulate);
      });
}

void PeerCopy::check_scatter(const Tensor& input, const Tensor& output) const {
  const bool same = output.dtype() == input.dtype() && (input.dtype() == DType::F32 || input.dtype() == DType::BF16);
  const bool widens = input.dtype() == DType::BF16 && output.dtype() == DType::F32;
  ND_CHECK(on_device(output) && (same || widens) && input.numel() == output.numel() * ranks_ &&
               output.device() == input.device(),
           "copy-engine reduce-scatter: input " << input.str() << " must hold " << ranks_
                                                << " blocks of output " << output.str()
                                                << " (f32 or bf16, or bf16 into f32)");
}

int PeerCopy::send_blocks(const Tensor& input, int64_t bytes) {
  ND_CHECK(bytes <= block_bytes_ && static_cast<int64_t>(input.nbytes()) == bytes * ranks_ &&
               (input.dtype() == DType::F32 || input.dtype() == DType::BF16),
           "copy-engine reduce-scatter: input " << input.str() << " must hold " << ranks_ << " f32 or bf16 blocks of "
                                                << bytes << " bytes (at most " << block_bytes_ << ")");
  const int slot = take_slot();
  if (bytes == 0) return slot;
  const char* in = static_cast<const char*>(input.raw_data());
  std::vector<const void*> blocks(ranks_);
  for (int q = 0; q < ranks_; ++q) blocks[q] = in + q * bytes;
  push_to_peers(slot, blocks, bytes, stream_);
  return slot;
}

void PeerCopy::finish_reduce_scatter(int slot, const Tensor& input, Tensor& output, float scale) {
  check_scatter(input, output);
  ND_CHECK(input.dtype() == output.dtype(), "copy-engine reduce-scatter in halves: input " << input.str()
                                                                                        << " and output " << output.str()
                                                                                        << " of one dtype");
  ND_CHECK(fits(output), "copy-engine reduce-scatter in halves: output " << output.str() << " exceeds a slot of "
                                                                          << block_bytes_ << " bytes");
  const int64_t bytes = static_cast<int64_t>(output.nbytes());
  if (bytes == 0) return;
  await_peers(slot);
  sum_piece(slot, static_cast<const char*>(input.raw_data()) + rank_ * bytes, output.raw_data(), bytes, input.dtype(),
            output.dtype(), scale, /*accumulate=*/false);
  release_peers(slot);
}

#else  // no CUDA: never usable

std::unique_ptr<PeerCopy> PeerCopy::create(Comm&, int, void*, int64_t, std::string* why) {
  *why = "no CUDA in this build";
  return nullptr;
}
PeerCopy::~PeerCopy() = default;
bool PeerCopy::on_device(const Tensor&) const { return false; }
bool PeerCopy::fits(const Tensor&) const { return false; }
void PeerCopy::all_gather(const Tensor&, Tensor&) { ND_FAIL("copy-engine all-gather: no CUDA in this build"); }
void PeerCopy::reduce_scatter(const Tensor&, Tensor&, float, bool) {
  ND_FAIL("copy-engine reduce-scatter: no CUDA in this build");
}
int PeerCopy::send_blocks(const Tensor&, int64_t) { ND_FAIL("copy-engine reduce-scatter: no CUDA in this build"); }
void PeerCopy::finish_reduce_scatter(int, const Tensor&, Tensor&, float) {
  ND_FAIL("copy-engine reduce-scatter: no CUDA in this build");
}
bool PeerCopy::share(const Tensor&) { return false; }
int PeerCopy::shared_index(const Tensor&) const { return -1; }
void PeerCopy::all_gather_shared(int, const Tensor&, Tensor&, bool) {
  ND_FAIL("copy-engine all-gather: no CUDA in this build");
}

#endif

}  // namespace nd::dist
