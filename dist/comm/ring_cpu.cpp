// The ring on host buffers. Each step is a group (send a slice of one chunk to the next rank,
// receive the matching slice of another chunk from the previous rank into a staging row);
// the next group is posted before the current slice is reduced, so MPI moves one slice while
// the CPU adds the other. Staging: 2 rows of one slice each, used alternately.
#include <vector>

#include "dist/comm/ring_drivers.h"
#include "dist/comm/ring_schedule.h"
#include "kernels/cpu/reduce.h"

namespace nd::dist::ring {

namespace {

// dst (n) = (dst + src) * scale for the buffer's dtype.
void reduce_into(Tensor& dst, const Tensor& src, float scale) {
  if (dst.dtype() == DType::F32) {
    cpu::reduce_add(dst.data<float>(), src.data<float>(), dst.numel(), scale);
  } else if (dst.dtype() == DType::F16) {
    cpu::reduce_add(dst.data<f16>(), src.data<f16>(), dst.numel(), scale);
  } else {
    cpu::reduce_add(dst.data<bf16>(), src.data<bf16>(), dst.numel(), scale);
  }
}

// One grouped step: send `out` to the next rank, receive `in` from the previous one. Empty
// slices are skipped on both sides alike (their lengths come from the shared schedule).
void post_exchange(Comm& comm, const Tensor& out, Tensor& in) {
  int r = comm.rank(), n = comm.size();
  comm.group_start();
  if (out.numel() > 0) comm.send(out, next_rank(r, n));
  if (in.numel() > 0) comm.recv(in, prev_rank(r, n));
  comm.post_group();
}

}  // namespace

void cpu_reduce_scatter(Comm& comm, Tensor& flat, ReduceOp op, int64_t slice_elems) {
  const int r = comm.rank(), n = comm.size();
  const int64_t count = flat.numel();
  const int nslices = slices_per_chunk(count, n, slice_elems);
  const int64_t longest_slice = slice_of(ring_chunk(count, n, 0), nslices, 0).size;
  Tensor staging = Tensor::empty({2, longest_slice}, flat.dtype(), Device::cpu());
  const int total = (n - 1) * nslices;  // items in order (step, slice)

  struct Item {
    RingChunk send, recv;
  };
  auto item = [&](int i) {
    int step = i / nslices, s = i % nslices;
    return Item{slice_of(ring_chunk(count, n, rs_send_chunk(r, step, n)), nslices, s),
                slice_of(ring_chunk(count, n, rs_recv_chunk(r, step, n)), nslices, s)};
  };
  auto post = [&](int i) {
    Item it = item(i);
    Tensor in = staging.select(i % 2).narrow(0, it.recv.size);
    post_exchange(comm, flat.narrow(it.send.begin, it.send.size), in);
  };

  post(0);
  for (int i = 0; i < total; ++i) {
    comm.wait_posted();
    // Item i+1 sends the slice reduced at item i+1-nslices; with one slice that is item i
    // itself, so the post must wait until after the reduction below.
    bool overlap = nslices >= 2;
    if (overlap && i + 1 < total) post(i + 1);
    Item it = item(i);
    bool last_step = i / nslices == n - 2;
    float scale = last_step ? reduce_scale(op, n) : 1.0f;
    Tensor dst = flat.narrow(it.recv.begin, it.recv.size);
    reduce_into(dst, staging.select(i % 2).narrow(0, it.recv.size), scale);
    if (!overlap && i + 1 < total) post(i + 1);
  }
}

// No reduction to overlap: each step moves whole chunks, received straight into place.
void cpu_all_gather(Comm& comm, Tensor& flat) {
  const int r = comm.rank(), n = comm.size();
  const int64_t count = flat.numel();
  for (int step = 0; step < n - 1; ++step) {
    RingChunk out = ring_chunk(count, n, ag_send_chunk(r, step, n));
    RingChunk in = ring_chunk(count, n, ag_recv_chunk(r, step, n));
    Tensor in_view = flat.narrow(in.begin, in.size);
    post_exchange(comm, flat.narrow(out.begin, out.size), in_view);
    comm.wait_posted();
  }
}

void cpu_direct_allreduce(Comm& comm, Tensor& flat, ReduceOp op) {
  const int r = comm.rank(), n = comm.size();
  const int64_t count = flat.numel();
  Tensor rows = Tensor::empty({n, count}, flat.dtype(), Device::cpu());
  comm.group_start();
  for (int peer = 0; peer < n; ++peer) {
    if (peer == r) continue;
    comm.send(flat, peer);
    Tensor row = rows.select(peer);
    comm.recv(row, peer);
  }
  comm.group_end();
  float scale = reduce_scale(op, n);
  if (flat.dtype() == DType::F32) {
    cpu::reduce_rows(flat.data<float>(), rows.data<float>(), n, count, scale, r);
  } else if (flat.dtype() == DType::F16) {
    cpu::reduce_rows(flat.data<f16>(), rows.data<f16>(), n, count, scale, r);
  } else {
    cpu::reduce_rows(flat.data<bf16>(), rows.data<bf16>(), n, count, scale, r);
  }
}

}  // namespace nd::dist::ring
