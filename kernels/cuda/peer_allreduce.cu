// Peer-memory all-reduce kernels (peer_allreduce.h). Memory ordering: a block publishes with
// __syncthreads() then one thread per peer storing the call's epoch with st.release.sys into the
// peer's flag (release is cumulative, so the block's earlier writes and reads are ordered before
// it), and waits with ld.acquire.sys spins on its own flags, then __syncthreads(). Peer data is
// read with ld.cg (L2, never a stale L1 line): in the two-shot, chunks change within the kernel.
#include "kernels/cuda/peer_allreduce.h"

#include <algorithm>

#include "kernels/cuda/common.cuh"

namespace nd::cuda {

namespace {

constexpr int kThreads = 512;
enum Phase { kStart = 0, kMiddle = 1, kEnd = 2 };

__device__ __forceinline__ void store_release_sys(uint32_t* p, uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ uint32_t load_acquire_sys(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ uint32_t* flag_at(uint32_t* region, int phase, int block, int sender) {
  return region + (phase * kPeerMaxBlocks + block) * kPeerMaxRanks + sender;
}

// Block `block` of every rank meets here: thread q < nranks tells rank q that this rank's block
// reached `phase` of call `epoch`, then waits until rank q's block has told it the same. The
// comparison is wrap-safe and >=, since a fast peer may already be one call ahead.
__device__ void meet(const PeerBuffers& b, int phase, uint32_t epoch, uint64_t timeout_ns) {
  __syncthreads();
  const int q = threadIdx.x;
  if (q < b.nranks) {
    store_release_sys(flag_at(b.flags[q], phase, blockIdx.x, b.rank), epoch);
    const uint32_t* mine = flag_at(b.flags[b.rank], phase, blockIdx.x, q);
    const uint64_t start = global_ns();
    while (static_cast<int32_t>(load_acquire_sys(mine) - epoch) < 0) {
      if (global_ns() - start > timeout_ns) {
        b.timeout->phase = phase;
        b.timeout->block = blockIdx.x;
        b.timeout->peer = q;
        __threadfence_system();
        b.timeout->set = 1;
        __threadfence_system();
        __trap();
      }
    }
  }
  __syncthreads();
}

template <typename T>
__device__ __forceinline__ Pack16<T> load_cg(const T* p) {
  Pack16<T> out;
  *reinterpret_cast<int4*>(out.v) = __ldcg(reinterpret_cast<const int4*>(p));
  return out;
}

__device__ __forceinline__ float load_cg_f32(const float* p) { return __ldcg(p); }
__device__ __forceinline__ float load_cg_f32(const bf16* p) {
  return to_f32(bf16{__ldcg(reinterpret_cast<const unsigned short*>(p))});
}

// dst[v] (16-byte pack v) = scale * sum over ranks of src_q[v], in rank order.
template <typename T>
__device__ __forceinline__ void reduce_pack(const PeerBuffers& b, int64_t v, float scale, T* dst) {
  constexpr int P = Pack16<T>::kSize;
  float acc[P];
#pragma unroll
  for (int k = 0; k < P; ++k) acc[k] = 0.0f;
  for (int q = 0; q < b.nranks; ++q) {
    const Pack16<T> x = load_cg(static_cast<const T*>(b.data[q]) + v * P);
#pragma unroll
    for (int k = 0; k < P; ++k) acc[k] += to_f32(x.v[k]);
  }
  Pack16<T> y;
#pragma unroll
  for (int k = 0; k < P; ++k) y.v[k] = from_f32<T>(acc[k] * scale);
  store16(dst + v * P, y);
}

// The elements past the last whole pack: reduced by block 0 on every rank, straight from the
// (never modified) copied-in inputs.
template <typename T>
__device__ void reduce_tail(const PeerBuffers& b, int64_t first, int64_t count, float scale, T* out) {
  if (blockIdx.x != 0) return;
  for (int64_t i = first + threadIdx.x; i < count; i += blockDim.x) {
    float acc = 0.0f;
    for (int q = 0; q < b.nranks; ++q) acc += load_cg_f32(static_cast<const T*>(b.data[q]) + i);
    out[i] = from_f32<T>(acc * scale);
  }
}

template <typename T>
__global__ void one_shot_kernel(PeerBuffers b, T* out, int64_t count, float scale, uint64_t timeout_ns) {
  constexpr int P = Pack16<T>::kSize;
  const uint32_t epoch = b.epochs[blockIdx.x] + 1;
  meet(b, kStart, epoch, timeout_ns);
  const int64_t packs = count / P;
  for (int64_t v = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; v < packs; v += int64_t{gridDim.x} * blockDim.x)
    reduce_pack(b, v, scale, out);
  reduce_tail(b, packs * P, count, scale, out);
  // No rank may copy its next input over its region while a peer still reads it.
  meet(b, kEnd, epoch, timeout_ns);
  if (threadIdx.x == 0) b.epochs[blockIdx.x] = epoch;
}

template <typename T>
__global__ void two_shot_kernel(PeerBuffers b, T* out, int64_t count, float scale, uint64_t timeout_ns) {
  constexpr int P = Pack16<T>::kSize;
  const uint32_t epoch = b.epochs[blockIdx.x] + 1;
  meet(b, kStart, epoch, timeout_ns);
  const int64_t packs = count / P, chunk = (packs + b.nranks - 1) / b.nranks;
  const int64_t first = blockIdx.x * int64_t{blockDim.x} + threadIdx.x, stride = int64_t{gridDim.x} * blockDim.x;
  // Reduce-scatter: this rank's chunk, reduced over every rank, into its own region (only this
  // rank reads or writes chunk `rank` of its region in this phase).
  T* own = static_cast<T*>(b.data[b.rank]);
  const int64_t mine = b.rank * chunk, mine_end = packs < mine + chunk ? packs : mine + chunk;
  for (int64_t v = mine + first; v < mine_end; v += stride) reduce_pack(b, v, scale, own);
  // Block x of every rank wrote and will read the same packs (same index arithmetic), so the
  // blocks meet pairwise.
  meet(b, kMiddle, epoch, timeout_ns);
  for (int q = 0; q < b.nranks; ++q) {
    const T* src = static_cast<const T*>(b.data[q]);
    const int64_t begin = q * chunk, end = packs < begin + chunk ? packs : begin + chunk;
    for (int64_t v = begin + first; v < end; v += stride) store16(out + v * P, load_cg(src + v * P));
  }
  reduce_tail(b, packs * P, count, scale, out);
  meet(b, kEnd, epoch, timeout_ns);
  if (threadIdx.x == 0) b.epochs[blockIdx.x] = epoch;
}

template <typename T>
void launch(const PeerBuffers& buffers, T* out, int64_t count, float scale, PeerAlgo algo, uint64_t timeout_ns,
            cudaStream_t stream) {
  ND_CHECK(buffers.nranks >= 2 && buffers.nranks <= kPeerMaxRanks,
           "peer all-reduce: " << buffers.nranks << " ranks (2.." << kPeerMaxRanks << ")");
  ND_CHECK(aligned16(out), "peer all-reduce: the output is not 16-byte aligned");
  if (count == 0) return;
  const int blocks = peer_allreduce_blocks(count, sizeof(T), buffers.nranks, algo);
  if (algo == PeerAlgo::OneShot) {
    one_shot_kernel<T><<<blocks, kThreads, 0, stream>>>(buffers, out, count, scale, timeout_ns);
  } else {
    two_shot_kernel<T><<<blocks, kThreads, 0, stream>>>(buffers, out, count, scale, timeout_ns);
  }
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

int peer_allreduce_blocks(int64_t count, int element_bytes, int nranks, PeerAlgo algo) {
  const int64_t packs = count * element_bytes / 16;
  const int64_t work = algo == PeerAlgo::OneShot ? packs : (packs + nranks - 1) / nranks;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(kPeerMaxBlocks, ceil_div(work, kThreads))));
}

void peer_allreduce(const PeerBuffers& buffers, float* out, int64_t count, float scale, PeerAlgo algo,
                    uint64_t timeout_ns, cudaStream_t stream) {
  launch(buffers, out, count, scale, algo, timeout_ns, stream);
}

void peer_allreduce(const PeerBuffers& buffers, bf16* out, int64_t count, float scale, PeerAlgo algo,
                    uint64_t timeout_ns, cudaStream_t stream) {
  launch(buffers, out, count, scale, algo, timeout_ns, stream);
}

}  // namespace nd::cuda
