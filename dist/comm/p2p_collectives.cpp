// The chain broadcast and the pairwise all-to-all (p2p_collectives.h) on send/recv groups.
#include "dist/comm/p2p_collectives.h"

#include <algorithm>

namespace nd::dist {

namespace {

constexpr int64_t kCpuSliceBytes = int64_t{256} << 10;
constexpr int64_t kGpuMinSliceBytes = int64_t{4} << 20;
constexpr int64_t kGpuDirectMaxBytes = int64_t{64} << 10;

int64_t broadcast_direct_max(const Comm& comm, const RingOptions& options) {
  if (options.direct_max_bytes >= 0) return options.direct_max_bytes;
  return comm.device().is_cuda() ? kGpuDirectMaxBytes : 0;
}

}  // namespace

int64_t chain_broadcast_slices(const Comm& comm, int64_t bytes, const RingOptions& options) {
  if (bytes <= broadcast_direct_max(comm, options) || comm.size() <= 2) return 1;
  int64_t slice = options.slice_bytes;
  if (slice <= 0) slice = comm.device().is_cuda() ? std::max(kGpuMinSliceBytes, bytes / 8) : kCpuSliceBytes;
  return std::max<int64_t>(1, (bytes + slice - 1) / slice);
}

CommWork chain_broadcast_async(Comm& comm, Tensor& buffer, int root, const RingOptions& options) {
  check_comm_buffer(comm, buffer, "broadcast buffer");
  check_peer(comm, root, "broadcast root");
  const int n = comm.size(), r = comm.rank();
  if (n == 1) return CommWork();
  if (options.check_sizes) comm.agree_on_layout(CollectiveOp::Broadcast, Algorithm::Ring, buffer, root);
  Tensor flat = buffer.view({-1});
  const int64_t count = flat.numel();
  comm.order_after_compute();
  if (count == 0) return comm.record_work();
  const int64_t bytes = static_cast<int64_t>(flat.nbytes());
  const bool direct = bytes <= broadcast_direct_max(comm, options);
  if (direct) {
    comm.group_start();
    if (r == root) {
      for (int q = 0; q < n; ++q)
        if (q != root) comm.send(flat, q);
    } else {
      comm.recv(flat, root);
    }
    comm.group_end();
    return comm.record_work();
  }
  // Chain position p = distance from the root. In step s, position p receives slice s - p + 1
  // from position p - 1 and sends slice s - p (received in step s - 1) to position p + 1.
  const int64_t slices = chain_broadcast_slices(comm, bytes, options);
  const int64_t per_slice = (count + slices - 1) / slices;
  const int p = (r - root + n) % n, next = (r + 1) % n, prev = (r - 1 + n) % n;
  auto slice = [&](int64_t j) {
    const int64_t begin = j * per_slice;
    return flat.narrow(begin, std::min(per_slice, count - begin));
  };
  for (int64_t s = 0; s < slices + n - 2; ++s) {
    const int64_t send_j = s - p, recv_j = s - p + 1;
    const bool sends = p < n - 1 && send_j >= 0 && send_j < slices && send_j * per_slice < count;
    const bool recvs = p > 0 && recv_j >= 0 && recv_j < slices && recv_j * per_slice < count;
    if (!sends && !recvs) continue;
    comm.group_start();
    if (sends) comm.send(slice(send_j), next);
    if (recvs) {
      Tensor into = slice(recv_j);
      comm.recv(into, prev);
    }
    comm.group_end();
  }
  return comm.record_work();
}

CommWork pairwise_all_to_all_async(Comm& comm, const Tensor& input, Tensor& output, const RingOptions& options) {
  check_all_to_all(comm, input, output);
  const int n = comm.size(), r = comm.rank();
  if (options.check_sizes && n > 1) comm.agree_on_layout(CollectiveOp::AllToAll, Algorithm::Ring, input, 0);
  const int64_t block = input.numel() / n;
  const Tensor in = input.view({-1});
  Tensor out = output.view({-1});
  comm.order_after_compute();
  if (block == 0) return comm.record_work();
  Tensor own = out.narrow(r * block, block);
  comm.stream_copy(own, in.narrow(r * block, block));
  for (int s = 1; s < n; ++s) {
    const int to = (r + s) % n, from = (r - s + n) % n;
    Tensor into = out.narrow(from * block, block);
    comm.group_start();
    comm.send(in.narrow(to * block, block), to);
    comm.recv(into, from);
    comm.group_end();
  }
  return comm.record_work();
}

}  // namespace nd::dist
