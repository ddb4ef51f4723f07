// The peer-memory all-reduce kernels (one node, CUDA IPC): every rank's registered buffer is
// mapped into every other rank, and ranks meet at flags written into each other's memory instead
// of a host barrier. Each rank copies its input into its buffer inside the kernel (copy-in), then
// one-shot: each rank reads all buffers and reduces the whole vector; two-shot: rank r reduces
// chunk r (reduce-scatter), then every rank copies the reduced chunks (all-gather). Push (for
// small sizes, kernels/cuda/peer_allreduce_push.cu): each rank stores its input straight into
// every peer's receive area with the call's flag inside each data word, and reduces what arrived
// in its own memory (no flag round, no remote loads). The host side (registration, handles,
// choice) is dist/comm/peer_comm.h. Async on `stream`.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "tensor/dtype.h"

namespace nd::cuda {

constexpr int kPeerMaxRanks = 8;
constexpr int kPeerMaxBlocks = 64;
constexpr int kPeerPhases = 2;  // start, middle (two-shot)
// Bytes at the front of each registered region for the flags: [phase][block][sender] uint32.
constexpr size_t kPeerFlagBytes = 8192;
static_assert(kPeerPhases * kPeerMaxBlocks * kPeerMaxRanks * sizeof(uint32_t) <= kPeerFlagBytes, "flags fit");

// Where a spin gave up (host-mapped memory, so the host reads it while the kernel is stuck or
// after the trap): set = 1, then the phase, block and the peer waited for.
struct PeerTimeout {
  volatile int set;
  volatile int phase;
  volatile int block;
  volatile int peer;
};

struct PeerBuffers {
  // Rank q's data region (its registered region + kPeerFlagBytes): two slots of slot_bytes, used
  // by turns (a block's call with epoch e uses slot e % 2).
  void* data[kPeerMaxRanks];
  int64_t slot_bytes = 0;
  uint32_t* flags[kPeerMaxRanks];  // rank q's flag region
  // This rank's per-block call counters, in its own device memory: block b's flags carry the
  // value epochs[b] + 1 of the call, and block b stores it back at the end. The counters advance
  // on the device, so a captured CUDA graph replays with fresh epochs each time.
  uint32_t* epochs;
  PeerTimeout* timeout;  // host-mapped
  int rank = 0;
  int nranks = 0;
  // Push: rank q's receive area as mapped here, laid out [slot 2][sender nranks][push_chunks *
  // kPeerPushChunkLines] lines of 16 bytes (each line: two words of 4 data bytes and a flag).
  void* push[kPeerMaxRanks];
  int64_t push_chunks = 0;  // the capacity per sender, in chunks of kPeerPushChunkBytes of data
  // This rank's per-chunk call counters (device memory, push_chunks of them): chunk c's lines carry
  // the value push_epochs[c] + 1 of the call, whichever block sends them.
  uint32_t* push_epochs = nullptr;
};

enum class PeerAlgo { OneShot, TwoShot, Push };

// Push: a chunk is a fixed run of lines (8 data bytes each) with one call counter; a call sends
// every line of each chunk it touches (past the data: zeros), so a line's stale flag in a slot is
// always the chunk's epoch - 2, never the one awaited.
constexpr int kPeerPushChunkLines = 256;
constexpr int64_t kPeerPushChunkBytes = kPeerPushChunkLines * 8;
// Bytes of one rank's receive area for `chunks` chunks per sender.
inline int64_t peer_push_area_bytes(int nranks, int64_t chunks) {
  return 2 * int64_t{nranks} * chunks * kPeerPushChunkLines * 16;
}

// In place: data (count) on every rank becomes scale * (sum over ranks q, in rank order, of rank
// q's data), so every rank holds the same bits. data 16-byte aligned, count * sizeof(T) at most
// slot_bytes (Push: at most push_chunks * kPeerPushChunkBytes). bf16 summed in f32, rounded once.
// A flag not seen within `timeout_ns` nanoseconds fills *timeout and traps (the stream then fails).
void peer_allreduce(const PeerBuffers& buffers, float* data, int64_t count, float scale, PeerAlgo algo,
                    uint64_t timeout_ns, cudaStream_t stream);
void peer_allreduce(const PeerBuffers& buffers, bf16* data, int64_t count, float scale, PeerAlgo algo,
                    uint64_t timeout_ns, cudaStream_t stream);

// The push one-shot alone (peer_allreduce calls it for PeerAlgo::Push after its checks).
void peer_allreduce_push(const PeerBuffers& buffers, float* data, int64_t count, float scale, uint64_t timeout_ns,
                         cudaStream_t stream);
void peer_allreduce_push(const PeerBuffers& buffers, bf16* data, int64_t count, float scale, uint64_t timeout_ns,
                         cudaStream_t stream);
struct PeerPushGrid {
  int blocks = 1;
  int threads = 32;
};
PeerPushGrid peer_push_grid(int64_t count, int element_bytes);

// The grid a call of `count` elements of `element_bytes` uses (same on every rank: block b of
// every rank meets block b of the others at the flags).
int peer_allreduce_blocks(int64_t count, int element_bytes, int nranks, PeerAlgo algo);

}  // namespace nd::cuda
