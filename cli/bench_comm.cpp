// `nanodist bench-comm` (CLI.md): flags to BenchCommOptions, the world communicator, the sweep;
// rank 0 prints each row as it finishes and writes the CSV.
#include "cli/bench_comm.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli/fault_guard_for.h"
#include "cli/subcommand.h"
#include "dist/comm/bench/auto_choice.h"
#include "dist/comm/bench/bench_timing.h"
#include "dist/comm/bench/comm_model.h"
#include "dist/comm/peer_comm.h"
#include "dist/comm/world.h"
#include "tensor/error.h"

namespace nd::cli {

FlagSet bench_comm_flags() {
  FlagSet set("bench-comm",
              "--op OP --impl native|ring|hierarchical|oneshot|twoshot|peer|push|auto [--timing eager|graph] [--fit] "
              "[flags]   (under mpirun, one rank per GPU or CPU)");
  set.group("collective")
      .add(flag("op", "allreduce",
                "allreduce, reducescatter, allgather, broadcast (root 0), alltoall, sendrecv, or p2p-matrix (every "
                "ordered pair of ranks alone: latency at --min-bytes, bandwidth at --max-bytes)"))
      .add(flag("impl", "native",
                "native (MPI on CPU, NCCL on GPU), ring (ours), hierarchical (our all-reduce inside each node, then "
                "across nodes; see --ranks-per-node), or for allreduce over GPU peer "
                "memory: oneshot, twoshot, peer (one-shot up to --one-shot-max-bytes, two-shot above), push (one-shot "
                "that stores into the peers' memory, flags in the data; up to --push-max-bytes) or auto (push, "
                "one-shot, two-shot, ring or NCCL by size; NCCL where there is no peer memory); "
                "with --op reducescatter or allgather, peer is ours over GPU peer memory moved by the copy engines "
                "(no SM taken; NCCL where there is no peer memory)"))
      .add(flag("device", "cpu", "cpu or cuda"))
      .add(flag("ranks-per-node", "0",
                "--impl hierarchical: count every N consecutive ranks as one node instead of the nodes MPI reports "
                "(0)",
                FlagType::Int))
      .add(flag("dtype", "f32", "f32 or bf16"))
      .group("sweep")
      .add(flag("min-bytes", "8", "smallest message (8, 64K, 1M, ...)"))
      .add(flag("max-bytes", "1G", "largest message"))
      .add(flag("factor", "2", "size multiplier between rows", FlagType::Float))
      .add(flag("warmup", "5", "untimed iterations per size", FlagType::Int))
      .add(flag("iters", "20", "timed iterations per size", FlagType::Int))
      .add(flag("timing", "eager",
                "eager (the calls launched back to back from the host, CUDA events around the batch, as nccl-tests; "
                "host cost per call shows where it exceeds the GPU's) or graph (GPU: the batch captured in a CUDA "
                "graph and replayed, so only the GPUs' time is left)"))
      .add(flag("csv", "", "also write the rows to this CSV file (rank 0)"))
      .group("model")
      .add(flag("fit", "false",
                "fit time = alpha + beta x bytes to the sweep (least squares on relative error), piecewise where one "
                "line is off by more than 3% RMS (up to 6 size ranges, the cuts chosen by the fit), and print each "
                "piece's alpha, beta and error",
                FlagType::Bool))
      .add(flag("fit-table", "", "with --fit: append the fit to this table (CSV; read by nanodist plan)"))
      .group("peer")
      .add(flag("peer-buffer", "64M", "registered buffer per rank; larger all-reduces go to NCCL"))
      .add(flag("one-shot-max-bytes", "256K", "--impl peer: one-shot up to this size, two-shot above"))
      .add(flag("push-max-bytes", "1M",
                "largest push all-reduce (each rank registers 4 x ranks x this for it; larger ones go to NCCL)"))
      .group("ring")
      .add(flag("slice-bytes", "0", "pipeline slice size (0 = automatic)"))
      .add(flag("direct-max-bytes", "-1", "largest all-reduce sent directly to every rank (-1 = automatic)"))
      .group("faults")
      .add(flag("comm-timeout", "600", "seconds one size may take before the rank aborts and exits (0 = off)",
                FlagType::Float))
      .add(flag("heartbeat-timeout", "15",
                "seconds without a heartbeat after which a peer rank counts as frozen or gone (0 = off)",
                FlagType::Float));
  // The pipelined ring's settings: read, so that an old command line gets the error naming what
  // runs instead (bench_comm_setup), but no longer listed.
  for (const char* removed : {"pipeline", "pipe-ctas"}) {
    FlagSpec spec = flag(removed, "0", "", FlagType::Int);
    spec.hidden = true;
    set.add(spec);
  }
  return set;
}

namespace {

// The ops --impl peer runs on the copy engines (dist/comm/peer_copy.h) rather than as an all-reduce.
bool on_copy_engines(dist::BenchOp op) { return op == dist::BenchOp::ReduceScatter || op == dist::BenchOp::AllGather; }

// "native", "ring", "hierarchical" or the peer impl that ran.
std::string impl_name(const dist::BenchCommOptions& options) {
  // Where there is no peer memory the peer impls are the backend's, and their rows say so.
  if (auto* peer = dynamic_cast<const dist::PeerComm*>(options.decorated)) {
    if (on_copy_engines(options.op)) return peer->copy_usable() ? "peer" : "native";
    return peer->peer_usable() ? dist::algorithm_name(peer->options().mode) : "native";
  }
  if (!options.ring()) return "native";
  return options.algorithm == dist::Algorithm::Hierarchical ? "hierarchical" : "ring";
}

// The point-to-point matrix: two N x N tables (latency, bandwidth) on rank 0, CSV rows per pair.
int run_p2p_matrix_command(dist::Comm& comm, const dist::BenchCommOptions& options, std::ofstream& csv) {
  const bool printer = comm.rank() == 0;
  if (printer) {
    std::printf("# nanodist bench-comm: op p2p-matrix, %d rank(s), backend %s on %s, dtype %s, %d warmup + %d iters\n",
                comm.size(), comm.backend(), comm.device().str().c_str(), dtype_name(options.dtype), options.warmup,
                options.iters);
    if (csv.is_open()) csv << p2p_csv_header() << "\n";
  }
  const int n = comm.size();
  std::vector<dist::P2pCell> cells = dist::run_p2p_matrix(comm, options, [&](const dist::P2pCell& cell) {
    if (printer && csv.is_open()) csv << format_p2p_csv(cell, options, comm) << "\n" << std::flush;
  });
  int64_t wrong = 0;
  for (const dist::P2pCell& cell : cells) wrong += cell.wrong;
  if (printer) {
    for (int table = 0; table < 2; ++table) {
      std::printf("\n# %s, row = sender, column = receiver\n%8s", table == 0 ? "latency (us) at --min-bytes"
                                                                              : "bandwidth (GB/s) at --max-bytes", "");
      for (int dst = 0; dst < n; ++dst) std::printf(" %9d", dst);
      std::printf("\n");
      for (int src = 0; src < n; ++src) {
        std::printf("%8d", src);
        for (int dst = 0; dst < n; ++dst) {
          if (src == dst) {
            std::printf(" %9s", "-");
            continue;
          }
          const dist::P2pCell& cell = cells[static_cast<size_t>(src * (n - 1) + dst - (dst > src ? 1 : 0))];
          std::printf(" %9.2f", table == 0 ? cell.latency_us : cell.bw_gbps);
        }
        std::printf("\n");
      }
    }
    if (wrong > 0) std::printf("# %lld wrong element(s) over all pairs\n", static_cast<long long>(wrong));
  }
  return wrong > 0 ? 1 : 0;
}

// The fits of a sweep, printed (rank 0) and appended to `fit_table` (a CSV) when given.
void print_fits(const std::vector<dist::BenchCommRow>& rows, const BenchCommSetup& setup, const dist::Comm& comm,
                const std::string& impl) {
  ND_CHECK_INPUT(rows.size() >= 2, "--fit needs a sweep of at least two sizes");
  std::vector<dist::AlphaBetaFit> pieces = dist::fit_rows_piecewise(rows);
  const dist::AlphaBetaFit line = dist::fit_rows(rows);
  std::printf("# one line: rms error %.1f%%, max %.1f%%; %zu piece(s), rms error %.1f%%:\n", 100 * line.rms_rel_err,
              100 * line.max_rel_err, pieces.size(), 100 * dist::CollectiveModel{pieces}.rms_rel_err());
  for (dist::AlphaBetaFit& piece : pieces) {
    piece.op = dist::bench_op_name(setup.options.op);
    piece.impl = impl;
    piece.nranks = comm.size();
    std::printf("# fit %lld..%lld B: time = %.3f us + bytes x %.4e us/B (%.1f GB/s algbw), rms error %.1f%%, max "
                "%.1f%% over %d sizes\n",
                static_cast<long long>(piece.min_bytes), static_cast<long long>(piece.max_bytes), piece.alpha_us,
                piece.beta_us_per_byte, piece.beta_us_per_byte > 0 ? 1e-3 / piece.beta_us_per_byte : 0.0,
                100 * piece.rms_rel_err, 100 * piece.max_rel_err, piece.points);
  }
  if (setup.fit_table.empty()) return;
  const bool fresh = !std::ifstream(setup.fit_table).good() || std::ifstream(setup.fit_table).peek() == EOF;
  std::ofstream out(setup.fit_table, std::ios::app);
  ND_CHECK_INPUT(out.good(), "cannot write --fit-table " << setup.fit_table);
  if (fresh) out << dist::fit_csv_header() << "\n";
  for (const dist::AlphaBetaFit& piece : pieces) out << dist::format_fit_csv(piece) << "\n";
}

int run_bench_comm_command(const ParsedFlags& flags) {
  BenchCommSetup setup = bench_comm_setup(flags);
  std::unique_ptr<dist::Comm> comm = bench_comm_world(setup);
  return run_bench_comm(setup, *comm);
}

}  // namespace

BenchCommSetup bench_comm_setup(const ParsedFlags& flags) {
  BenchCommSetup setup;
  dist::BenchCommOptions& options = setup.options;
  const std::string op = flags.get_string("op");
  setup.matrix = op == "p2p-matrix";
  if (!setup.matrix) options.op = dist::parse_bench_op(op);
  const std::string impl = flags.get_string("impl");
  setup.impl = impl;
  ND_CHECK_INPUT(impl != "compare", "--impl compare is the lab's now: nanodist-lab bench-comm --impl compare (a build "
                                    "configured with -DNANODIST_LAB=ON)");
  setup.peer_impl = impl == "oneshot" || impl == "twoshot" || impl == "peer" || impl == "push" || impl == "auto";
  ND_CHECK_INPUT(impl == "native" || impl == "ring" || impl == "hierarchical" || setup.peer_impl,
                 "unknown --impl '" << impl << "' (expected native, ring, hierarchical, oneshot, twoshot, peer, push or "
                                              "auto)");
  const bool copy_engines = impl == "peer" && !setup.matrix && on_copy_engines(options.op);
  ND_CHECK_INPUT(!setup.peer_impl || copy_engines || (!setup.matrix && options.op == dist::BenchOp::AllReduce),
                 "--impl " << impl << " is an all-reduce (peer also a reduce-scatter or all-gather): use it with --op "
                           << "allreduce");
  if (impl == "ring" || impl == "hierarchical") options.algorithm = dist::parse_algorithm(impl);
  options.ranks_per_node = static_cast<int>(flags.get_int("ranks-per-node"));
  ND_CHECK_INPUT(options.ranks_per_node >= 0, "--ranks-per-node must be >= 0, got " << options.ranks_per_node);
  setup.device = parse_device(flags.get_string("device"));
  options.dtype = parse_dtype(flags.get_string("dtype"));
  options.min_bytes = parse_byte_size(flags.get_string("min-bytes"));
  options.max_bytes = parse_byte_size(flags.get_string("max-bytes"));
  options.factor = flags.get_double("factor");
  options.warmup = static_cast<int>(flags.get_int("warmup"));
  options.iters = static_cast<int>(flags.get_int("iters"));
  options.timing = dist::parse_bench_timing(flags.get_string("timing"));
  ND_CHECK_INPUT(options.timing == dist::BenchTiming::Eager || setup.device.is_cuda(),
                 "--timing graph needs --device cuda (it replays a CUDA graph)");
  options.ring_options.slice_bytes = parse_byte_size(flags.get_string("slice-bytes"));
  const std::string direct = flags.get_string("direct-max-bytes");
  options.ring_options.direct_max_bytes = direct == "-1" ? -1 : parse_byte_size(direct);
  ND_CHECK_INPUT(flags.get_int("pipeline") <= 1 && flags.get_int("pipe-ctas") == 0,
                 "--pipeline and --pipe-ctas: the pipelined ring was removed (it lost to the step-by-step ring, which "
                 "--impl ring runs)");
  setup.comm_timeout = flags.get_double("comm-timeout");
  setup.heartbeat_timeout = flags.get_double("heartbeat-timeout");
  ND_CHECK_INPUT(setup.comm_timeout >= 0.0, "--comm-timeout must be >= 0 (0 = off), got " << setup.comm_timeout);
  ND_CHECK_INPUT(setup.heartbeat_timeout >= 0.0,
                 "--heartbeat-timeout must be >= 0 (0 = off), got " << setup.heartbeat_timeout);
  setup.csv_path = flags.get_string("csv");
  setup.fit = flags.get_bool("fit");
  setup.fit_table = flags.get_string("fit-table");
  ND_CHECK_INPUT(setup.fit || setup.fit_table.empty(), "--fit-table needs --fit");
  dist::PeerOptions& peer = setup.peer;
  if (setup.peer_impl) peer.mode = dist::parse_algorithm(impl);
  peer.buffer_bytes = parse_byte_size(flags.get_string("peer-buffer"));
  peer.one_shot_max_bytes = parse_byte_size(flags.get_string("one-shot-max-bytes"));
  peer.push_max_bytes = parse_byte_size(flags.get_string("push-max-bytes"));
  peer.ring = options.ring_options;
  // Auto decides from times taken as this sweep takes them, measured at every size it reaches.
  peer.decide = dist::auto_decider(options.timing, options.max_bytes);
  ND_CHECK_INPUT(peer.buffer_bytes >= 16 && peer.buffer_bytes % 16 == 0,
                 "--peer-buffer must be a positive multiple of 16 bytes");
  return setup;
}

std::unique_ptr<dist::Comm> bench_comm_world(const BenchCommSetup& setup) {
  // The ring's transfers (auto times the ring too) take the wider send/recv communicator.
  return dist::make_world_comm(setup.device,
                               setup.options.ring() || (setup.peer_impl && setup.peer.mode == dist::Algorithm::Auto));
}

int run_bench_comm(BenchCommSetup& setup, dist::Comm& comm, dist::BenchLoad* load, const std::string& suffix) {
  dist::BenchCommOptions& options = setup.options;
  // Collective: the peer comm registers its buffers with the other ranks (and auto times its choices).
  std::unique_ptr<dist::PeerComm> peer_comm;
  if (setup.peer_impl) {
    peer_comm = std::make_unique<dist::PeerComm>(comm, setup.peer);
    options.decorated = peer_comm.get();
  }
  options.load = load;
  // A stuck or vanished peer ends the sweep with one line instead of hanging it; each size is
  // timed on its own.
  std::unique_ptr<dist::FaultGuard> guard = fault_guard_for(comm, setup.comm_timeout, setup.heartbeat_timeout);
  std::optional<dist::Watchdog::Scope> watched;
  if (guard) watched.emplace(guard->watchdog().watch("the first size of the sweep"));
  const bool printer = comm.rank() == 0;
  std::ofstream csv;
  if (printer && !setup.csv_path.empty()) {
    csv.open(setup.csv_path);
    ND_CHECK_INPUT(csv.good(), "cannot write --csv " << setup.csv_path << " (is its directory there and writable?)");
    if (!setup.matrix) csv << bench_comm_csv_header() << "\n";
  }
  if (setup.matrix) {
    const int status = run_p2p_matrix_command(comm, options, csv);
    watched.reset();
    if (guard) guard->finish();
    return status;
  }
  const std::string impl = impl_name(options) + suffix;
  if (printer) {
    std::printf(
        "# nanodist bench-comm: op %s, impl %s, %d rank(s), backend %s on %s, dtype %s, %d warmup + %d iters, "
        "timing %s\n",
        dist::bench_op_name(options.op), impl.c_str(), comm.size(), comm.backend(), comm.device().str().c_str(),
        dtype_name(options.dtype), options.warmup, options.iters, dist::bench_timing_name(options.timing));
    if (load) std::printf("# load: %s\n", load->describe().c_str());
    if (peer_comm && !peer_comm->peer_usable())
      std::printf("# no peer memory (%s): the all-reduce is the backend's\n", peer_comm->unusable_reason().c_str());
    if (peer_comm && peer_comm->peer_usable() && setup.peer.mode == dist::Algorithm::Auto) {
      std::printf("# auto:");
      for (const auto& [largest, choice] : peer_comm->auto_table())
        std::printf(" %s up to %lld B;", dist::algorithm_name(choice), static_cast<long long>(largest));
      std::printf("\n");
    }
    std::printf("%s\n", bench_comm_header().c_str());
    std::fflush(stdout);
  }
  int64_t wrong = 0;
  std::vector<dist::BenchCommRow> rows = dist::run_bench_comm(comm, options, [&](const dist::BenchCommRow& row) {
    wrong += row.wrong;
    if (guard) {
      watched.reset();
      watched.emplace(guard->watchdog().watch("the size after " + std::to_string(row.bytes) + " bytes"));
    }
    if (!printer) return;
    std::printf("%s\n", format_bench_comm_row(row).c_str());
    if (!row.load_outlasted)
      std::printf("# %lld B: the load ended before the timed calls did (%d tries): the time above is partly unloaded\n",
                  static_cast<long long>(row.bytes), dist::kLoadTries);
    std::fflush(stdout);
    if (csv.is_open()) csv << format_bench_comm_csv_as(row, options, comm, impl) << "\n" << std::flush;
  });
  watched.reset();
  if (guard) guard->finish();
  if (printer && wrong > 0) std::printf("# %lld wrong element(s) over all ranks\n", static_cast<long long>(wrong));
  if (setup.fit && printer) print_fits(rows, setup, comm, impl);
  return wrong > 0 ? 1 : 0;
}


int64_t parse_byte_size(const std::string& text) {
  std::string t = text;
  if (!t.empty() && (t.back() == 'B' || t.back() == 'b')) t.pop_back();
  ND_CHECK_INPUT(!t.empty(), "bad byte size '" << text << "' (expected e.g. 8, 64K, 16M, 1G)");
  int64_t unit = 1;
  switch (std::toupper(static_cast<unsigned char>(t.back()))) {
    case 'K': unit = int64_t{1} << 10; break;
    case 'M': unit = int64_t{1} << 20; break;
    case 'G': unit = int64_t{1} << 30; break;
    default: break;
  }
  if (unit > 1) t.pop_back();
  ND_CHECK_INPUT(!t.empty() && t.find_first_not_of("0123456789") == std::string::npos,
                 "bad byte size '" << text << "' (expected e.g. 8, 64K, 16M, 1G)");
  ND_CHECK_INPUT(t.size() <= 12, "byte size '" << text << "' is too large");
  return std::stoll(t) * unit;
}

std::string bench_comm_header() {
  char line[256];
  std::snprintf(line, sizeof line, "%14s %13s %6s %6s %11s %11s %11s %8s", "size", "count", "type", "redop",
                "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong");
  return line;
}

std::string format_bench_comm_row(const dist::BenchCommRow& row) {
  char line[256];
  std::snprintf(line, sizeof line, "%14lld %13lld %6s %6s %11.2f %11.2f %11.2f %8lld",
                static_cast<long long>(row.bytes), static_cast<long long>(row.count), row.type.c_str(), row.redop.c_str(), row.time_us, row.algbw_gbps,
                row.busbw_gbps, static_cast<long long>(row.wrong));
  return line;
}

std::string bench_comm_csv_header() {
  return "op,impl,device,nranks,size,count,type,redop,time_us,algbw_gbps,busbw_gbps,wrong,timing";
}

std::string format_bench_comm_csv_as(const dist::BenchCommRow& row, const dist::BenchCommOptions& options,
                                     const dist::Comm& comm, const std::string& impl) {
  char line[512];
  std::snprintf(line, sizeof line, "%s,%s,%s,%d,%lld,%lld,%s,%s,%.3f,%.4f,%.4f,%lld,%s", dist::bench_op_name(options.op),
                impl.c_str(), comm.device().is_cuda() ? "cuda" : "cpu", comm.size(), static_cast<long long>(row.bytes),
                static_cast<long long>(row.count), row.type.c_str(), row.redop.c_str(), row.time_us, row.algbw_gbps,
                row.busbw_gbps, static_cast<long long>(row.wrong), dist::bench_timing_name(options.timing));
  return line;
}

std::string p2p_csv_header() { return "op,impl,device,nranks,src,dst,min_bytes,max_bytes,type,latency_us,bw_gbps,wrong"; }

std::string format_p2p_csv(const dist::P2pCell& cell, const dist::BenchCommOptions& options, const dist::Comm& comm) {
  char line[512];
  std::snprintf(line, sizeof line, "p2p-matrix,native,%s,%d,%d,%d,%lld,%lld,%s,%.3f,%.4f,%lld",
                comm.device().is_cuda() ? "cuda" : "cpu", comm.size(), cell.src, cell.dst,
                static_cast<long long>(options.min_bytes), static_cast<long long>(options.max_bytes),
                dtype_name(options.dtype), cell.latency_us, cell.bw_gbps, static_cast<long long>(cell.wrong));
  return line;
}

Subcommand bench_comm_command() {
  return {"bench-comm", "collective bandwidth curves (run under mpirun)", bench_comm_flags, run_bench_comm_command};
}

}  // namespace nd::cli
