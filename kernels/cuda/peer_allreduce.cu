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
enum Phase { kStart = 0, kMiddle = 1 };

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

// Rank q's slot for the call with `epoch`: two slots alternate, so a rank's next call may copy in
// while a slow peer still reads this call's slot (a peer reaches call e + 2 only after every rank
// has started call e + 1, hence finished reading call e: no barrier at the end).
template <typename T>
__device__ __forceinline__ T* slot_of(const PeerBuffers& b, int q, uint32_t epoch) {
  return reinterpret_cast<T*>(static_cast<char*>(b.data[q]) + (epoch & 1u) * b.slot_bytes);
}

// dst[v] (16-byte pack v) = scale * sum over ranks of their slot's pack v, in rank order.
template <typename T>
__device__ __forceinline__ void reduce_pack(const PeerBuffers& b, uint32_t epoch, int64_t v, float scale, T* dst) {
  constexpr int P = Pack16<T>::kSize;
  float acc[P];
#pragma unroll
  for (int k = 0; k < P; ++k) acc[k] = 0.0f;
  for (int q = 0; q < b.nranks; ++q) {
    const Pack16<T> x = load_cg(slot_of<T>(b, q, epoch) + v * P);
#pragma unroll
    for (int k = 0; k < P; ++k) acc[k] += to_f32(x.v[k]);
  }
  Pack16<T> y;
#pragma unroll
  for (int k = 0; k < P; ++k) y.v[k] = from_f32<T>(acc[k] * scale);
  store16(dst + v * P, y);
}

// The elements past the last whole pack: copied in, then reduced, by block 0 on every rank
// (nobody modifies them in the slots).
template <typename T>
__device__ void copy_tail(const T* in, int64_t first, int64_t count, T* slot) {
  if (blockIdx.x != 0) return;
  for (int64_t i = first + threadIdx.x; i < count; i += blockDim.x) slot[i] = in[i];
}

template <typename T>
__device__ void reduce_tail(const PeerBuffers& b, uint32_t epoch, int64_t first, int64_t count, float scale, T* out) {
  if (blockIdx.x != 0) return;
  for (int64_t i = first + threadIdx.x; i < count; i += blockDim.x) {
    float acc = 0.0f;
    for (int q = 0; q < b.nranks; ++q) acc += load_cg_f32(slot_of<T>(b, q, epoch) + i);
    out[i] = from_f32<T>(acc * scale);
  }
}

// Block x copies in exactly the packs that block x of every rank reads after the start flags, so
// the blocks meet pairwise and never wait for a whole grid. `data` is in place (input and output).
template <typename T>
__global__ void one_shot_kernel(PeerBuffers b, T* data, int64_t count, float scale, uint64_t timeout_ns) {
  constexpr int P = Pack16<T>::kSize;
  const uint32_t epoch = b.epochs[blockIdx.x] + 1;
  const int64_t packs = count / P;
  const int64_t first = blockIdx.x * int64_t{blockDim.x} + threadIdx.x, stride = int64_t{gridDim.x} * blockDim.x;
  T* own = slot_of<T>(b, b.rank, epoch);
  for (int64_t v = first; v < packs; v += stride) store16(own + v * P, load16(data + v * P));
  copy_tail(data, packs * P, count, own);
  meet(b, kStart, epoch, timeout_ns);
  for (int64_t v = first; v < packs; v += stride) reduce_pack(b, epoch, v, scale, data);
  reduce_tail(b, epoch, packs * P, count, scale, data);
  if (threadIdx.x == 0) b.epochs[blockIdx.x] = epoch;
}

template <typename T>
__global__ void two_shot_kernel(PeerBuffers b, T* data, int64_t count, float scale, uint64_t timeout_ns) {
  constexpr int P = Pack16<T>::kSize;
  const uint32_t epoch = b.epochs[blockIdx.x] + 1;
  const int64_t packs = count / P, chunk = (packs + b.nranks - 1) / b.nranks;
  const int64_t first = blockIdx.x * int64_t{blockDim.x} + threadIdx.x, stride = int64_t{gridDim.x} * blockDim.x;
  T* own = slot_of<T>(b, b.rank, epoch);
  // Every chunk's packs at this block's offsets: what block x of rank q reduces from chunk q.
  for (int q = 0; q < b.nranks; ++q) {
    const int64_t begin = q * chunk, end = packs < begin + chunk ? packs : begin + chunk;
    for (int64_t v = begin + first; v < end; v += stride) store16(own + v * P, load16(data + v * P));
  }
  copy_tail(data, packs * P, count, own);
  meet(b, kStart, epoch, timeout_ns);
  // Reduce-scatter: this rank's chunk, reduced over every rank, into its own slot (in this phase
  // only this rank touches chunk `rank` of its slot; the others read their own chunks).
  const int64_t mine = b.rank * chunk, mine_end = packs < mine + chunk ? packs : mine + chunk;
  for (int64_t v = mine + first; v < mine_end; v += stride) reduce_pack(b, epoch, v, scale, own);
  meet(b, kMiddle, epoch, timeout_ns);
  // All-gather: every rank's reduced chunk, written by block x of its owner.
  for (int q = 0; q < b.nranks; ++q) {
    const T* src = slot_of<T>(b, q, epoch);
    const int64_t begin = q * chunk, end = packs < begin + chunk ? packs : begin + chunk;
    for (int64_t v = begin + first; v < end; v += stride) store16(data + v * P, load_cg(src + v * P));
  }
  reduce_tail(b, epoch, packs * P, count, scale, data);
  if (threadIdx.x == 0) b.epochs[blockIdx.x] = epoch;
}

template <typename T>
void launch(const PeerBuffers& buffers, T* data, int64_t count, float scale, PeerAlgo algo, uint64_t timeout_ns,
            cudaStream_t stream) {
  ND_CHECK(buffers.nranks >= 2 && buffers.nranks <= kPeerMaxRanks,
           "peer all-reduce: " << buffers.nranks << " ranks (2.." << kPeerMaxRanks << ")");
  ND_CHECK(aligned16(data), "peer all-reduce: the buffer is not 16-byte aligned");
  ND_CHECK(algo == PeerAlgo::Push || count * static_cast<int64_t>(sizeof(T)) <= buffers.slot_bytes,
           "peer all-reduce: " << count * sizeof(T) << " bytes exceed the registered slot of " << buffers.slot_bytes);
  if (count == 0) return;
  if (algo == PeerAlgo::Push) {
    peer_allreduce_push(buffers, data, count, scale, timeout_ns, stream);
    return;
  }
  const int blocks = peer_allreduce_blocks(count, sizeof(T), buffers.nranks, algo);
  if (algo == PeerAlgo::OneShot) {
    one_shot_kernel<T><<<blocks, kThreads, 0, stream>>>(buffers, data, count, scale, timeout_ns);
  } else {
    two_shot_kernel<T><<<blocks, kThreads, 0, stream>>>(buffers, data, count, scale, timeout_ns);
  }
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

int peer_allreduce_blocks(int64_t count, int element_bytes, int nranks, PeerAlgo algo) {
  if (algo == PeerAlgo::Push) return peer_push_grid(count, element_bytes).blocks;
  const int64_t packs = count * element_bytes / 16;
  const int64_t work = algo == PeerAlgo::OneShot ? packs : (packs + nranks - 1) / nranks;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(kPeerMaxBlocks, ceil_div(work, kThreads))));
}

void peer_allreduce(const PeerBuffers& buffers, float* data, int64_t count, float scale, PeerAlgo algo,
                    uint64_t timeout_ns, cudaStream_t stream) {
  launch(buffers, data, count, scale, algo, timeout_ns, stream);
}

void peer_allreduce(const PeerBuffers& buffers, bf16* data, int64_t count, float scale, PeerAlgo algo,
                    uint64_t timeout_ns, cudaStream_t stream) {
  launch(buffers, data, count, scale, algo, timeout_ns, stream);
}

}  // namespace nd::cuda
