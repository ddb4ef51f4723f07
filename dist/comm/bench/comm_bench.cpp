// The bench-comm sweep: for each size, one checked run against the closed form, then warmup
// and timed iterations (dist/comm/bench/bench_timing.h); the time is the max over ranks of the mean
// per-iteration time.
#include "dist/comm/bench/comm_bench.h"

#include "dist/comm/bench/comm_bench_data.h"
#include "dist/comm/bench/comm_timer.h"
#include "dist/comm/hierarchical_comm.h"
#include "dist/comm/node_map.h"
#include "dist/comm/ring_comm.h"

namespace nd::dist {

namespace {

// The buffers of one size and how to run and check the op on them. With --impl ring the
// collectives run through the ring decorator (dist/comm/ring_comm.h), as training does, except the
// reduce-scatter: it runs the ring's in-place half, because the decorator's staging copy of the
// whole input would be timed with it. Broadcast roots at rank 0.
struct Case {
  BenchOp op;
  bool ring;  // the ring's in-place reduce-scatter
  RingOptions ring_options;
  Comm* ring_comm;  // the decorator over the bench's comm (ring, or options.decorated)
  int64_t total = 0;  // elements in the whole buffer (the row's count)
  int64_t block = 0;  // per-rank block for all-gather / reduce-scatter
  Tensor a, b;        // a: in-place buffer or input; b: output (native AG/RS, sendrecv)

  void fill(Comm& comm) {
    const int r = comm.rank();
    switch (op) {
      case BenchOp::AllReduce:
      case BenchOp::SendRecv: bench::fill_pattern(a, r, 0); break;
      case BenchOp::AllGather: bench::fill_pattern(a, r, r * block); break;  // the input: this rank's block
      case BenchOp::ReduceScatter:
      case BenchOp::Broadcast:
      case BenchOp::AllToAll: bench::fill_pattern(a, r, 0); break;
    }
  }

  // Launches one call. Timed loops keep only the last CommWork: calls on one comm run in order,
  // and waiting for each would add a compute-stream round trip to every GPU call.
  CommWork run(Comm& comm) {
    const int r = comm.rank(), n = comm.size();
    Comm& collectives = ring_comm ? *ring_comm : comm;
    switch (op) {
      case BenchOp::AllReduce: return collectives.allreduce_async(a, ReduceOp::Sum);
      case BenchOp::SendRecv:
        comm.order_after_compute();
        comm.group_start();
        comm.send(a, (r + 1) % n);
        comm.recv(b, (r - 1 + n) % n);
        comm.group_end();
        return comm.record_work();
      case BenchOp::AllGather: return collectives.all_gather_async(a, b);
      case BenchOp::ReduceScatter:
        return ring ? ring_reduce_scatter_async(comm, a, ReduceOp::Sum, ring_options)
                    : collectives.reduce_scatter_async(a, b, ReduceOp::Sum);
      case BenchOp::Broadcast: return collectives.broadcast_async(a, 0);
      case BenchOp::AllToAll: return collectives.all_to_all_async(a, b);
    }
    return CommWork();
  }

  int64_t wrong(Comm& comm) {
    using bench::Expect;
    const int r = comm.rank(), n = comm.size();
    switch (op) {
      case BenchOp::AllReduce: return bench::count_wrong(a, Expect::RankSum, r, n, 0, 0);
      case BenchOp::SendRecv: return bench::count_wrong(b, Expect::OwnPattern, (r - 1 + n) % n, n, 0, 0);
      case BenchOp::AllGather: return bench::count_wrong(b, Expect::BlockOwner, r, n, 0, block);
      case BenchOp::ReduceScatter: {
        Tensor mine = ring ? a.narrow(r * block, block) : b;
        return bench::count_wrong(mine, Expect::RankSum, r, n, r * block, 0);
      }
      case BenchOp::Broadcast: return bench::count_wrong(a, Expect::OwnPattern, 0, n, 0, 0);
      case BenchOp::AllToAll: return bench::count_wrong(b, Expect::Transposed, r, n, 0, block);
    }
    return 0;
  }
};

// Elements for a row of `bytes`: at least one per rank where blocks are needed, whole blocks.
int64_t total_count(BenchOp op, int64_t bytes, DType dtype, int nranks) {
  int64_t count = std::max<int64_t>(1, bytes / static_cast<int64_t>(dtype_size(dtype)));
  if (op == BenchOp::AllGather || op == BenchOp::ReduceScatter || op == BenchOp::AllToAll)
    count = std::max<int64_t>(nranks, count / nranks * nranks);
  return count;
}

Case make_case(const Comm& comm, Comm* collectives, const BenchCommOptions& options, int64_t total) {
  const bool in_place_ring = options.ring() && !options.decorated && options.op == BenchOp::ReduceScatter;
  Case c{options.op, in_place_ring, options.ring_options, collectives, total, total / comm.size(), {}, {}};
  const Device device = comm.device();
  const bool blocks = options.op == BenchOp::AllGather || options.op == BenchOp::ReduceScatter;
  if (blocks && !in_place_ring) {
    const bool gather = options.op == BenchOp::AllGather;
    c.a = Tensor::empty({gather ? c.block : total}, options.dtype, device);
    c.b = Tensor::empty({gather ? total : c.block}, options.dtype, device);
  } else {
    c.a = Tensor::empty({total}, options.dtype, device);
    if (options.op == BenchOp::SendRecv || options.op == BenchOp::AllToAll)
      c.b = Tensor::empty({total}, options.dtype, device);
  }
  return c;
}

}  // namespace

BenchOp parse_bench_op(const std::string& name) {
  if (name == "allreduce") return BenchOp::AllReduce;
  if (name == "sendrecv") return BenchOp::SendRecv;
  if (name == "allgather") return BenchOp::AllGather;
  if (name == "reducescatter") return BenchOp::ReduceScatter;
  if (name == "broadcast") return BenchOp::Broadcast;
  if (name == "alltoall") return BenchOp::AllToAll;
  ND_FAIL_INPUT("unknown --op '" << name
                                 << "' (expected allreduce, sendrecv, allgather, reducescatter, broadcast, alltoall or "
                                    "p2p-matrix)");
}

const char* bench_op_name(BenchOp op) {
  switch (op) {
    case BenchOp::AllReduce: return "allreduce";
    case BenchOp::SendRecv: return "sendrecv";
    case BenchOp::AllGather: return "allgather";
    case BenchOp::ReduceScatter: return "reducescatter";
    case BenchOp::Broadcast: return "broadcast";
    case BenchOp::AllToAll: return "alltoall";
  }
  return "?";
}

double bus_factor(BenchOp op, int nranks) {
  const double n = nranks;
  switch (op) {
    case BenchOp::AllReduce: return 2.0 * (n - 1) / n;
    case BenchOp::AllGather:
    case BenchOp::ReduceScatter:
    case BenchOp::AllToAll: return (n - 1) / n;
    case BenchOp::Broadcast:
    case BenchOp::SendRecv: return 1.0;
  }
  return 1.0;
}

namespace {
constexpr int kGpuSettleIterations = 3000;

void check_options(const BenchCommOptions& options) {
  ND_CHECK_INPUT(options.dtype == DType::F32 || options.dtype == DType::BF16,
                 "--dtype must be f32 or bf16, not " << dtype_name(options.dtype));
  ND_CHECK_INPUT(options.min_bytes >= 1 && options.max_bytes >= options.min_bytes,
                 "--min-bytes " << options.min_bytes << " and --max-bytes " << options.max_bytes
                                << " must satisfy 1 <= min <= max");
  ND_CHECK_INPUT(options.factor > 1.0, "--factor " << options.factor << " must be > 1");
  ND_CHECK_INPUT(options.warmup >= 0 && options.iters >= 1,
                 "--warmup " << options.warmup << " must be >= 0 and --iters " << options.iters << " >= 1");
}

// Seconds per send of `a` from src to dst (0 on the other ranks), after one checked transfer
// into `b` whose wrong elements are added to `wrong`; every rank takes part in the barriers.
double time_pair(Comm& comm, CommTimer& timer, const BenchCommOptions& options, int src, int dst, Tensor& a,
                 Tensor& b, int64_t& wrong) {
  const int r = comm.rank();
  auto transfer = [&] {
    if (r == src) comm.send(a, dst);
    if (r == dst) comm.recv(b, src);
  };
  if (r == src) bench::fill_pattern(a, src, 0);
  comm.order_after_compute();
  transfer();
  comm.synchronize();
  if (r == dst) wrong += bench::count_wrong(b, bench::Expect::OwnPattern, src, comm.size(), 0, 0);
  for (int i = 0; i < options.warmup; ++i) transfer();
  comm.barrier();
  timer.start();
  for (int i = 0; i < options.iters; ++i) transfer();
  const double seconds = timer.stop() / options.iters;
  return r == src || r == dst ? seconds : 0.0;
}

}  // namespace

std::vector<P2pCell> run_p2p_matrix(Comm& comm, const BenchCommOptions& options,
                                    const std::function<void(const P2pCell&)>& on_cell) {
  check_options(options);
  const int n = comm.size();
  const int64_t elem = static_cast<int64_t>(dtype_size(options.dtype));
  const int64_t small = std::max<int64_t>(1, options.min_bytes / elem), large = std::max<int64_t>(1, options.max_bytes / elem);
  Tensor a = Tensor::empty({large}, options.dtype, comm.device()), b = Tensor::empty({large}, options.dtype, comm.device());
  Tensor a_small = a.narrow(0, small), b_small = b.narrow(0, small);
  CommTimer timer(comm);
  std::vector<P2pCell> cells;
  for (int src = 0; src < n; ++src)
    for (int dst = 0; dst < n; ++dst) {
      if (src == dst) continue;
      int64_t wrong = 0;
      double seconds[2] = {time_pair(comm, timer, options, src, dst, a_small, b_small, wrong),
                           time_pair(comm, timer, options, src, dst, a, b, wrong)};
      comm.host_allreduce(seconds, 2, HostReduce::Max);
      comm.host_allreduce(&wrong, 1, HostReduce::Sum);
      P2pCell cell;
      cell.src = src;
      cell.dst = dst;
      cell.latency_us = seconds[0] * 1e6;
      cell.bw_gbps = static_cast<double>(large * elem) / seconds[1] / 1e9;
      cell.wrong = wrong;
      cells.push_back(cell);
      if (on_cell) on_cell(cell);
    }
  return cells;
}

std::vector<BenchCommRow> run_bench_comm(Comm& comm, const BenchCommOptions& options,
                                         const std::function<void(const BenchCommRow&)>& on_row) {
  check_options(options);
  std::vector<BenchCommRow> rows;
  // Collective (splits): the hierarchical decorator only when asked for.
  std::unique_ptr<RingComm> ring_comm;
  if (options.ring() && !options.decorated) {
    if (options.algorithm == Algorithm::Hierarchical)
      ring_comm = std::make_unique<HierarchicalComm>(comm, discover_nodes(comm, options.ranks_per_node).node(comm.rank()),
                                                     options.ring_options);
    else
      ring_comm = std::make_unique<RingComm>(comm, options.ring_options);
  }
  Comm* collectives = options.decorated ? options.decorated : ring_comm.get();
  int64_t previous_total = -1;
  for (double size = static_cast<double>(options.min_bytes); size <= static_cast<double>(options.max_bytes) * (1 + 1e-12);
       size *= options.factor) {
    const int64_t total = total_count(options.op, static_cast<int64_t>(size), options.dtype, comm.size());
    if (total == previous_total) continue;  // sizes below one element (or block) collapse
    previous_total = total;
    Case c = make_case(comm, collectives, options, total);

    c.fill(comm);
    CommWork work = c.run(comm);
    if (rows.empty() && comm.device().is_cuda()) {
      // Before the first timed size: NCCL connects peers lazily and an idle GPU runs at low
      // clocks, so a few thousand launches first keep the smallest sizes from paying for both.
      for (int i = 0; i < kGpuSettleIterations; ++i) work = c.run(comm);
      work.wait();
      c.fill(comm);
      work = c.run(comm);
    }
    work.wait();
    int64_t wrong = c.wrong(comm);
    comm.host_allreduce(&wrong, 1, HostReduce::Sum);

    bool outlasted = true;
    const double seconds = time_launches(comm, options.timing, options.warmup, options.iters, [&] { return c.run(comm); },
                                         options.load, &outlasted);

    BenchCommRow row;
    row.count = total;
    row.bytes = total * static_cast<int64_t>(dtype_size(options.dtype));
    row.type = dtype_name(options.dtype);
    row.redop = (options.op == BenchOp::AllReduce || options.op == BenchOp::ReduceScatter) ? "sum" : "none";
    row.time_us = seconds * 1e6;
    row.algbw_gbps = static_cast<double>(row.bytes) / seconds / 1e9;
    row.busbw_gbps = row.algbw_gbps * bus_factor(options.op, comm.size());
    row.wrong = wrong;
    row.load_outlasted = outlasted;
    rows.push_back(row);
    if (on_row) on_row(row);
  }
  return rows;
}

}  // namespace nd::dist
