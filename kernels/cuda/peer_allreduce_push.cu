// The push one-shot all-reduce (peer_allreduce.h, PeerAlgo::Push), for small messages: each rank
// stores its input straight into every peer's receive area, every 8-byte word carrying 4 data
// bytes and the call's flag, so a receiver waits on its own memory and one one-way NVLink trip is
// the whole latency: no copy-in, no flag round, no remote loads, no fences.
//
// Why it is safe. A word is written by one 8-byte store and read by one 8-byte load (single-copy
// atomic), so a word whose flag is the awaited one carries this call's data. Flags are per chunk
// of lines (fixed, whatever the grid), so a line's flags always come from the same counter; a call
// writes every line of the chunks it touches, so a slot's stale flags are the chunk's epoch - 2.
// Two slots alternate: a rank sends chunk c of call e + 2 only after it received every peer's
// chunk c of call e + 1, which they sent after their kernel of call e (the reader of slot e % 2)
// had ended.
#include <algorithm>
#include <type_traits>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/peer_allreduce.h"

namespace nd::cuda {

namespace {

constexpr int kPushMaxBlocks = 64;
constexpr int kPushThreads = 256;
constexpr int kPushPhase = 2;  // PeerTimeout::phase of a push wait

__device__ __forceinline__ void store_line_volatile(unsigned long long* p, unsigned long long w0, unsigned long long w1) {
  asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(w0), "l"(w1) : "memory");
}

__device__ __forceinline__ void load_line_volatile(const unsigned long long* p, unsigned long long& w0,
                                                   unsigned long long& w1) {
  asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(w0), "=l"(w1) : "l"(p) : "memory");
}

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// 8 bytes of T: 2 floats or 4 bf16, as the two 32-bit halves a line carries.
template <typename T>
union Line8 {
  using Raw = std::conditional_t<sizeof(T) == 4, uint32_t, uint16_t>;
  static constexpr int kSize = 8 / sizeof(T);
  uint2 words;
  Raw raw[kSize];
};

// Line v of `data` (count elements, 16-byte aligned); elements past the end read as zero.
template <typename T>
__device__ __forceinline__ uint2 load_input_line(const T* data, int64_t v, int64_t count) {
  using L = Line8<T>;
  if ((v + 1) * L::kSize <= count) return *reinterpret_cast<const uint2*>(data + v * L::kSize);
  L line;
  line.words = make_uint2(0u, 0u);
  const auto* raw = reinterpret_cast<const typename L::Raw*>(data);
  for (int k = 0; k < L::kSize && v * L::kSize + k < count; ++k) line.raw[k] = raw[v * L::kSize + k];
  return line.words;
}

template <typename T>
__device__ __forceinline__ void store_output_line(T* data, int64_t v, int64_t count, const float (&y)[Line8<T>::kSize]) {
  using L = Line8<T>;
  L line;
  auto* out = reinterpret_cast<T*>(line.raw);
#pragma unroll
  for (int k = 0; k < L::kSize; ++k) out[k] = from_f32<T>(y[k]);
  if ((v + 1) * L::kSize <= count) {
    *reinterpret_cast<uint2*>(data + v * L::kSize) = line.words;
    return;
  }
  auto* raw = reinterpret_cast<typename L::Raw*>(data);
  for (int k = 0; k < L::kSize && v * L::kSize + k < count; ++k) raw[v * L::kSize + k] = line.raw[k];
}

template <typename T>
__device__ __forceinline__ void accumulate(float (&acc)[Line8<T>::kSize], uint2 words) {
  Line8<T> line;
  line.words = words;
  const auto* x = reinterpret_cast<const T*>(line.raw);
#pragma unroll
  for (int k = 0; k < Line8<T>::kSize; ++k) acc[k] += to_f32(x[k]);
}

// Line v from `sender` in `receiver`'s area, slot `slot`: (16 bytes as two 64-bit words).
__device__ __forceinline__ unsigned long long* line_at(const PeerBuffers& b, int receiver, int slot, int sender,
                                                        int64_t v) {
  const int64_t lines_per_sender = b.push_chunks * kPeerPushChunkLines;
  return static_cast<unsigned long long*>(b.push[receiver]) + 2 * ((slot * b.nranks + sender) * lines_per_sender + v);
}

// Spins on one line of this rank's own area until both words carry `flag`; returns the data.
__device__ uint2 wait_line(const PeerBuffers& b, const unsigned long long* p, uint32_t flag, int64_t chunk, int sender,
                           uint64_t timeout_ns) {
  unsigned long long w0, w1;
  load_line_volatile(p, w0, w1);
  if (static_cast<uint32_t>(w0 >> 32) == flag && static_cast<uint32_t>(w1 >> 32) == flag)
    return make_uint2(static_cast<uint32_t>(w0), static_cast<uint32_t>(w1));
  const uint64_t start = global_ns();
  for (;;) {
    load_line_volatile(p, w0, w1);
    if (static_cast<uint32_t>(w0 >> 32) == flag && static_cast<uint32_t>(w1 >> 32) == flag)
      return make_uint2(static_cast<uint32_t>(w0), static_cast<uint32_t>(w1));
    if (global_ns() - start > timeout_ns) {
      b.timeout->phase = kPushPhase;
      b.timeout->block = static_cast<int>(chunk);
      b.timeout->peer = sender;
      __threadfence_system();
      b.timeout->set = 1;
      __threadfence_system();
      __trap();
    }
  }
}

// data (count) in place. Block x takes chunks x, x + grid, ...; within a chunk, thread t its lines
// t, t + blockDim, ...: it sends them to every peer, then reduces them (the same thread reads line
// v of the input and writes line v of the output, so in place is safe).
template <typename T>
__global__ void push_kernel(PeerBuffers b, T* data, int64_t count, float scale, uint64_t timeout_ns) {
  constexpr int E = Line8<T>::kSize;
  const int64_t lines = (count + E - 1) / E, chunks = (lines + kPeerPushChunkLines - 1) / kPeerPushChunkLines;
  for (int64_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    const uint32_t flag = b.push_epochs[c] + 1;
    const unsigned long long high = static_cast<unsigned long long>(flag) << 32;
    for (int i = threadIdx.x; i < kPeerPushChunkLines; i += blockDim.x) {
      const int64_t v = c * kPeerPushChunkLines + i;
      const uint2 x = v < lines ? load_input_line(data, v, count) : make_uint2(0u, 0u);
      // Peers in turn from the next rank on, so the ranks do not all store to rank 0 first.
      for (int step = 1; step < b.nranks; ++step) {
        const int to = (b.rank + step) % b.nranks;
        store_line_volatile(line_at(b, to, flag & 1, b.rank, v), high | x.x, high | x.y);
      }
    }
  }
  for (int64_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    const uint32_t flag = b.push_epochs[c] + 1;
    for (int i = threadIdx.x; i < kPeerPushChunkLines; i += blockDim.x) {
      const int64_t v = c * kPeerPushChunkLines + i;
      if (v >= lines) break;
      float acc[E];
#pragma unroll
      for (int k = 0; k < E; ++k) acc[k] = 0.0f;
      // Rank order, so every rank rounds the same sum the same way.
      for (int q = 0; q < b.nranks; ++q) {
        const uint2 x = q == b.rank ? load_input_line(data, v, count)
                                    : wait_line(b, line_at(b, b.rank, flag & 1, q, v), flag, c, q, timeout_ns);
        accumulate<T>(acc, x);
      }
#pragma unroll
      for (int k = 0; k < E; ++k) acc[k] *= scale;
      store_output_line(data, v, count, acc);
    }
  }
  // Every thread has read its chunks' counters above; only then do they advance.
  __syncthreads();
  if (threadIdx.x == 0)
    for (int64_t c = blockIdx.x; c < chunks; c += gridDim.x) b.push_epochs[c] += 1;
}

}  // namespace

PeerPushGrid peer_push_grid(int64_t count, int element_bytes) {
  const int64_t lines = ceil_div(count * element_bytes, 8);
  const int64_t chunks = ceil_div(lines, kPeerPushChunkLines);
  PeerPushGrid grid;
  grid.blocks = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(chunks, kPushMaxBlocks)));
  // One chunk (up to 2 KB): a block just large enough for the data lines, at least a warp; the
  // chunk's other lines are its padding, a few stores per thread.
  grid.threads = chunks > 1 ? kPushThreads : static_cast<int>(std::min<int64_t>(kPushThreads, 32 * ceil_div(lines, 32)));
  return grid;
}

namespace {

template <typename T>
void launch_push(const PeerBuffers& buffers, T* data, int64_t count, float scale, uint64_t timeout_ns,
                 cudaStream_t stream) {
  ND_CHECK(count * static_cast<int64_t>(sizeof(T)) <= buffers.push_chunks * kPeerPushChunkBytes,
           "peer all-reduce (push): " << count * sizeof(T) << " bytes exceed the receive area of "
                                      << buffers.push_chunks * kPeerPushChunkBytes);
  const PeerPushGrid grid = peer_push_grid(count, sizeof(T));
  push_kernel<T><<<grid.blocks, grid.threads, 0, stream>>>(buffers, data, count, scale, timeout_ns);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void peer_allreduce_push(const PeerBuffers& buffers, float* data, int64_t count, float scale, uint64_t timeout_ns,
                         cudaStream_t stream) {
  launch_push(buffers, data, count, scale, timeout_ns, stream);
}

void peer_allreduce_push(const PeerBuffers& buffers, bf16* data, int64_t count, float scale, uint64_t timeout_ns,
                         cudaStream_t stream) {
  launch_push(buffers, data, count, scale, timeout_ns, stream);
}

}  // namespace nd::cuda
