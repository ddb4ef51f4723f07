// The measurement behind `nanodist bench-comm`: nccl-tests-style bandwidth sweeps of one collective
// over message sizes, for the native backend, our ring (and chain, pairwise exchange) or any other
// decorator (the peer-memory all-reduce), each size checked against a closed-form answer; and the
// N x N point-to-point latency and bandwidth matrix. Returns rows; cli/ prints them.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dist/comm/bench/bench_timing.h"
#include "dist/comm/comm.h"
#include "dist/comm/ring_allreduce.h"

namespace nd::dist {

enum class BenchOp { AllReduce, SendRecv, AllGather, ReduceScatter, Broadcast, AllToAll };
// allreduce|sendrecv|allgather|reducescatter|broadcast|alltoall
BenchOp parse_bench_op(const std::string& name);
const char* bench_op_name(BenchOp op);

struct BenchCommOptions {
  BenchOp op = BenchOp::AllReduce;
  // Native (MPI on CPU, NCCL on GPU), Ring (ours), or Hierarchical: the ring's all-reduce in two
  // levels, inside each node then across (dist/comm/hierarchical_comm.h; nodes from
  // dist/comm/node_map.h); its other ops as the flat ring.
  Algorithm algorithm = Algorithm::Native;
  bool ring() const { return algorithm == Algorithm::Ring || algorithm == Algorithm::Hierarchical; }
  int ranks_per_node = 0;  // > 0: every that many consecutive ranks count as a node (else MPI's nodes)
  // When set, the collectives are this comm's (a decorator over the bench's comm, e.g. the
  // peer-memory all-reduce), whatever `algorithm` says; the reduce-scatter then goes through its
  // reduce_scatter call too.
  Comm* decorated = nullptr;
  DType dtype = DType::F32;
  int64_t min_bytes = 8;
  int64_t max_bytes = int64_t{1} << 30;
  double factor = 2.0;
  int warmup = 5;
  int iters = 20;
  BenchTiming timing = BenchTiming::Eager;  // --timing: eager launches, or the batch replayed as a CUDA graph
  RingOptions ring_options;
  // Compute beside every timed batch (eager timing only; the lab's --load gemm); null = the GPU otherwise idle.
  BenchLoad* load = nullptr;
};

struct BenchCommRow {
  int64_t bytes = 0;  // the whole buffer: for all-gather the output, for reduce-scatter and all-to-all the input
  int64_t count = 0;  // elements in those bytes
  std::string type;   // f32 | bf16
  std::string redop;  // sum, or none for data movement
  double time_us = 0;     // max over ranks of the mean per-iteration time
  double algbw_gbps = 0;  // bytes / time
  double busbw_gbps = 0;  // algbw x the op's bus factor (nccl-tests' convention)
  int64_t wrong = 0;      // mismatched elements, summed over all ranks
  // With a load: false where the load ended before the timed calls did (time_launches' bounds),
  // so the time is partly that of an idle GPU. Always true without a load.
  bool load_outlasted = true;
};

// busbw / algbw as nccl-tests defines it: 2(n-1)/n for all-reduce, (n-1)/n for all-gather,
// reduce-scatter and all-to-all, 1 for broadcast and sendrecv.
double bus_factor(BenchOp op, int nranks);

// Runs the sweep on `comm` (collective: every rank calls it with the same options). Each finished
// size is passed to `on_row` (on every rank; printing is the caller's business) and returned.
std::vector<BenchCommRow> run_bench_comm(Comm& comm, const BenchCommOptions& options,
                                         const std::function<void(const BenchCommRow&)>& on_row = {});

// One cell of the point-to-point matrix: rank src sends to rank dst alone (every other pair idle).
struct P2pCell {
  int src = 0;
  int dst = 0;
  double latency_us = 0;  // time per send of options.min_bytes
  double bw_gbps = 0;     // options.max_bytes / time per send of options.max_bytes
  int64_t wrong = 0;      // mismatched elements received, both sizes
};

// Every ordered pair in turn (collective: every rank calls it); warmup, iters and dtype from
// `options`, the op ignored. Cells in (src, dst) order, the diagonal left out.
std::vector<P2pCell> run_p2p_matrix(Comm& comm, const BenchCommOptions& options,
                                    const std::function<void(const P2pCell&)>& on_cell = {});

}  // namespace nd::dist
