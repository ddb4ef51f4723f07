// Who sends what at each ring step, shared by the CPU and GPU drivers. With N ranks, rank r
// at reduce-scatter step k (0..N-2) sends chunk r-k-1 and receives chunk r-k-2 (mod N), which
// it reduces; after the last step it owns the finished chunk r. All-gather step k sends chunk
// r-k and receives chunk r-k-1, so chunk r travels all the way round. `dir` -1 runs the same
// ring the other way round (send to r-1, receive from r+1, chunk indices mirrored): it still
// leaves chunk r finished on rank r, so the two directions can share a buffer's chunks.
#pragma once
#include <algorithm>
#include <cstdint>

#include "dist/comm/ring_allreduce.h"

namespace nd::dist::ring {

inline int wrap(int i, int n) { return ((i % n) + n) % n; }
inline int next_rank(int r, int n) { return wrap(r + 1, n); }
inline int prev_rank(int r, int n) { return wrap(r - 1, n); }

inline int rs_send_chunk(int r, int step, int n, int dir = 1) { return wrap(r - dir * (step + 1), n); }
inline int rs_recv_chunk(int r, int step, int n, int dir = 1) { return wrap(r - dir * (step + 2), n); }
inline int ag_send_chunk(int r, int step, int n, int dir = 1) { return wrap(r - dir * step, n); }
inline int ag_recv_chunk(int r, int step, int n, int dir = 1) { return wrap(r - dir * (step + 1), n); }

// Slices per chunk so that a slice holds at most `slice_elems` elements (at least 1 slice).
// The same on every rank, so sender and receiver cut a chunk identically.
inline int slices_per_chunk(int64_t count, int n, int64_t slice_elems) {
  int64_t longest = (count + n - 1) / n;
  if (slice_elems <= 0 || longest <= slice_elems) return 1;
  return static_cast<int>((longest + slice_elems - 1) / slice_elems);
}

// Slice s of `chunk` cut into `nslices` balanced pieces, as absolute buffer positions.
inline RingChunk slice_of(RingChunk chunk, int nslices, int s) {
  RingChunk part = ring_chunk(chunk.size, nslices, s);
  return {chunk.begin + part.begin, part.size};
}

inline int lane_dir(int lane) { return lane == 0 ? 1 : -1; }

}  // namespace nd::dist::ring
