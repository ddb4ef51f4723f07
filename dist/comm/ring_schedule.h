// Who sends what at each ring step, shared by the CPU and GPU drivers. With N ranks, rank r
// at reduce-scatter step k (0..N-2) sends chunk r-k-1 and receives chunk r-k-2 (mod N), which
// it reduces; after the last step it owns the finished chunk r. All-gather step k sends chunk
// r-k and receives chunk r-k-1, so chunk r travels all the way round. `dir` -1 runs the same
// ring the other way round (send to r-1, receive from r+1, chunk indices mirrored): it still
// leaves chunk r finished on rank r, so the two directions can share a buffer's chunks.
// ring_transfer lays out the pipelined GPU ring: every step of both halves, per pipe and lane.
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

// One transfer of the pipelined ring (dist/comm/ring_cuda.cpp, cuda_pipelined_ring). The buffer's
// chunks are cut by lane (half each way round, as in the step-by-step ring) and each lane's part
// by pipe (`pipes` balanced pieces); pipe p of every rank runs the whole ring over its pieces on
// its own NCCL communicator and stream, so the pipes' steps overlap. `step` counts both halves:
// 0..n-2 reduce-scatter (the received piece is added into `recv`), n-1..2n-3 all-gather (it is
// written over `recv`). Sender and receiver compute equal lengths: the rank `dir` away sends
// this rank's `recv` piece at the same (step, pipe, lane).
struct RingTransfer {
  RingChunk send, recv;
  int send_to = 0, recv_from = 0;
  bool reduce = false;
};

inline int lane_dir(int lane) { return lane == 0 ? 1 : -1; }

inline RingTransfer ring_transfer(int64_t count, int r, int n, int step, int lanes, int lane, int pipes, int pipe) {
  const int dir = lane_dir(lane);
  const bool reduce = step < n - 1;
  const int ag_step = step - (n - 1);
  const int send_chunk = reduce ? rs_send_chunk(r, step, n, dir) : ag_send_chunk(r, ag_step, n, dir);
  const int recv_chunk = reduce ? rs_recv_chunk(r, step, n, dir) : ag_recv_chunk(r, ag_step, n, dir);
  auto piece = [&](int chunk) { return slice_of(slice_of(ring_chunk(count, n, chunk), lanes, lane), pipes, pipe); };
  return {piece(send_chunk), piece(recv_chunk), wrap(r + dir, n), wrap(r - dir, n), reduce};
}

}  // namespace nd::dist::ring
