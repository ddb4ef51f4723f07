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
#include "dist/comm/allreduce_compare.h"
#include "dist/comm/bench_load.h"
#include "dist/comm/bench_timing.h"
#include "dist/comm/comm_model.h"
#include "dist/comm/peer_comm.h"
#include "dist/comm/world.h"
#include "tensor/error.h"

namespace nd::cli {
namespace {

FlagSet bench_comm_flags() {
  FlagSet set("bench-comm",
              "--op OP --impl native|ring|hierarchical|oneshot|twoshot|peer|push|auto|compare [--timing eager|graph] "
              "[--fit] "
              "[flags]   (under mpirun, one rank per GPU or CPU)");
  set.group("collective")
      .add(flag("op", "allreduce",
                "allreduce, reducescatter, allgather, broadcast (root 0), alltoall, sendrecv, or p2p-matrix (every "
                "ordered pair of ranks alone: latency at --min-bytes, bandwidth at --max-bytes)"))
      .add(flag("impl", "native",
                "native (MPI on CPU, NCCL on GPU), ring (ours), hierarchical (our all-reduce inside each node, then "
                "across nodes; NANODIST_RANKS_PER_NODE=k pretends k ranks per node), or for allreduce over GPU peer "
                "memory: oneshot, twoshot, peer (one-shot up to --one-shot-max-bytes, two-shot above), push (one-shot "
                "that stores into the peers' memory, flags in the data; up to --push-max-bytes) or auto (push, "
                "one-shot, two-shot, ring or NCCL by size; NCCL where there is no peer memory), or compare (allreduce: "
                "auto and each of its five choices at every size, auto's time over the best choice's per size); "
                "with --op reducescatter or allgather, peer is ours over GPU peer memory moved by the copy engines "
                "(no SM taken; NCCL where there is no peer memory)"))
      .add(flag("device", "cpu", "cpu or cuda"))
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
      .add(flag("load", "none",
                "none, or gemm (GPU, eager timing: a bf16 GEMM of --load-shape runs back to back on another stream "
                "of the same GPU for the whole timed window; the rows' and fits' impl gets '+gemm')"))
      .add(flag("load-shape", "8192x8192x8192", "--load gemm: the GEMM's MxNxK"))
      .group("model")
      .add(flag("fit", "false",
                "fit time = alpha + beta x bytes to the sweep (least squares on relative error), piecewise where one "
                "line is off by more than 3% RMS (up to 6 size ranges, the cuts chosen by the fit), and print each "
                "piece's alpha, beta and error",
                FlagType::Bool))
      .add(flag("fit-table", "", "with --fit: append the fit to this table (CSV; read by nanodist plan and --impl auto)"))
      .group("peer")
      .add(flag("peer-buffer", "64M", "registered buffer per rank; larger all-reduces go to NCCL"))
      .add(flag("one-shot-max-bytes", "256K", "--impl peer: one-shot up to this size, two-shot above"))
      .add(flag("push-max-bytes", "1M",
                "largest push all-reduce (each rank registers 4 x ranks x this for it; larger ones go to NCCL)"))
      .add(flag("peer-table", "",
                "--impl auto or compare: decide from this table instead of timing the choices at start: a sweep "
                "saved by --impl compare --csv, or a fit table (--fit-table)"))
      .group("ring")
      .add(flag("slice-bytes", "0", "pipeline slice size (0 = automatic)"))
      .add(flag("direct-max-bytes", "-1", "largest all-reduce sent directly to every rank (-1 = automatic)"))
      .add(flag("pipeline", "0",
                "GPU: 1 = step by step on one NCCL communicator, 2..8 = that many pipes on communicators of "
                "their own (0 = automatic)",
                FlagType::Int))
      .add(flag("pipe-ctas", "0", "GPU: CTAs of each pipe's communicator, 1..64 (0 = 64 / pipes, at least 8)",
                FlagType::Int))
      .group("faults")
      .add(flag("comm-timeout", "600", "seconds one size may take before the rank aborts and exits (0 = off)",
                FlagType::Float))
      .add(flag("heartbeat-timeout", "15",
                "seconds without a heartbeat after which a peer rank counts as frozen or gone (0 = off)",
                FlagType::Float));
  return set;
}

// The ops --impl peer runs on the copy engines (dist/comm/peer_copy.h) rather than as an all-reduce.
bool on_copy_engines(dist::BenchOp op) { return op == dist::BenchOp::ReduceScatter || op == dist::BenchOp::AllGather; }

// "native", "ring", "hierarchical", or "ring-pN" for the pipelined GPU ring on N pipes (its own
// curve in a plot).
std::string impl_name(const dist::BenchCommOptions& options, const dist::Comm& comm) {
  // Where there is no peer memory the peer impls are the backend's, and their rows say so.
  if (auto* peer = dynamic_cast<const dist::PeerComm*>(options.decorated)) {
    if (on_copy_engines(options.op)) return peer->copy_usable() ? "peer" : "native";
    return peer->peer_usable() ? dist::peer_mode_name(peer->options().mode) : "native";
  }
  if (!options.ring) return "native";
  if (options.hierarchical) return "hierarchical";
  const int pipes = comm.device().is_cuda() ? dist::ring_pipeline(options.ring_options) : 1;
  return pipes >= 2 ? "ring-p" + std::to_string(pipes) : "ring";
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

// --impl compare: auto against each of its choices, a table of times per size and the ratio of
// auto to the best (the bar: at most 1.05), the CSV one row per (size, impl).
int run_compare_command(dist::PeerComm& peer, const dist::BenchCommOptions& options, std::ofstream& csv,
                        const std::function<void(int64_t)>& on_size) {
  dist::Comm& comm = peer.inner();
  const bool printer = comm.rank() == 0;
  if (printer) {
    std::printf("# time per call (us); - = the choice cannot run at this size; auto/best = auto's time over the fastest "
                "choice's\n%14s", "size");
    for (int i = 0; i < dist::kCompareImpls; ++i) std::printf(" %10s", dist::compare_impl_name(i));
    std::printf(" %9s %8s %9s %7s\n", "auto ran", "best", "auto/best", "#wrong");
    std::fflush(stdout);
  }
  int64_t wrong = 0;
  double worst = 0;
  int64_t worst_bytes = 0;
  dist::run_allreduce_compare(peer, options, [&](const dist::CompareRow& row) {
    int64_t row_wrong = 0;
    for (int i = 0; i < dist::kCompareImpls; ++i) row_wrong += row.wrong[i];
    wrong += row_wrong;
    if (row.auto_over_best > worst) {
      worst = row.auto_over_best;
      worst_bytes = row.bytes;
    }
    on_size(row.bytes);
    if (!printer) return;
    std::printf("%14lld", static_cast<long long>(row.bytes));
    for (int i = 0; i < dist::kCompareImpls; ++i) {
      if (row.time_us[i] < 0) {
        std::printf(" %10s", "-");
      } else {
        std::printf(" %10.2f", row.time_us[i]);
      }
    }
    std::printf(" %9s %8s %9.3f %7lld\n", dist::choice_name(row.auto_choice), dist::compare_impl_name(row.best),
                row.auto_over_best, static_cast<long long>(row_wrong));
    std::fflush(stdout);
    if (csv.is_open())
      for (int i = 0; i < dist::kCompareImpls; ++i)
        if (row.time_us[i] >= 0)
          csv << format_bench_comm_csv_as(row.as_bench_row(i, dtype_name(options.dtype), comm.size()), options, comm,
                                          dist::compare_impl_name(i))
              << "\n";
    if (csv.is_open()) csv << std::flush;
  });
  if (printer) {
    std::printf("# auto/best: at most %.3f (at %lld B); the bar is 1.05: %s\n", worst, static_cast<long long>(worst_bytes),
                worst <= 1.05 ? "met" : "not met");
    if (wrong > 0) std::printf("# %lld wrong element(s) over all ranks\n", static_cast<long long>(wrong));
  }
  return wrong > 0 ? 1 : 0;
}

int run_bench_comm_command(const ParsedFlags& flags) {
  dist::BenchCommOptions options;
  const std::string op = flags.get_string("op");
  const bool matrix = op == "p2p-matrix";
  if (!matrix) options.op = dist::parse_bench_op(op);
  const std::string impl = flags.get_string("impl");
  const bool compare = impl == "compare";
  const bool peer =
      impl == "oneshot" || impl == "twoshot" || impl == "peer" || impl == "push" || impl == "auto" || compare;
  ND_CHECK_INPUT(impl == "native" || impl == "ring" || impl == "hierarchical" || peer,
                 "unknown --impl '" << impl
                                    << "' (expected native, ring, hierarchical, oneshot, twoshot, peer, push, auto or "
                                       "compare)");
  const bool copy_engines = impl == "peer" && !matrix && on_copy_engines(options.op);
  ND_CHECK_INPUT(!peer || copy_engines || (!matrix && options.op == dist::BenchOp::AllReduce),
                 "--impl " << impl << " is an all-reduce (peer also a reduce-scatter or all-gather): use it with --op "
                           << "allreduce");
  options.ring = impl == "ring" || impl == "hierarchical";
  options.hierarchical = impl == "hierarchical";
  const Device device = parse_device(flags.get_string("device"));
  options.dtype = parse_dtype(flags.get_string("dtype"));
  options.min_bytes = parse_byte_size(flags.get_string("min-bytes"));
  options.max_bytes = parse_byte_size(flags.get_string("max-bytes"));
  options.factor = flags.get_double("factor");
  options.warmup = static_cast<int>(flags.get_int("warmup"));
  options.iters = static_cast<int>(flags.get_int("iters"));
  options.timing = dist::parse_bench_timing(flags.get_string("timing"));
  ND_CHECK_INPUT(options.timing == dist::BenchTiming::Eager || device.is_cuda(),
                 "--timing graph needs --device cuda (it replays a CUDA graph)");
  options.ring_options.slice_bytes = parse_byte_size(flags.get_string("slice-bytes"));
  const std::string direct = flags.get_string("direct-max-bytes");
  options.ring_options.direct_max_bytes = direct == "-1" ? -1 : parse_byte_size(direct);
  const int64_t pipeline = flags.get_int("pipeline"), pipe_ctas = flags.get_int("pipe-ctas");
  ND_CHECK_INPUT(pipeline >= 0 && pipeline <= 8, "--pipeline " << pipeline << " must be from 0 to 8");
  ND_CHECK_INPUT(pipe_ctas >= 0 && pipe_ctas <= 64, "--pipe-ctas " << pipe_ctas << " must be from 0 to 64");
  options.ring_options.pipeline = static_cast<int>(pipeline);
  options.ring_options.pipe_ctas = static_cast<int>(pipe_ctas);
  const double comm_timeout = flags.get_double("comm-timeout"), heartbeat_timeout = flags.get_double("heartbeat-timeout");
  ND_CHECK_INPUT(comm_timeout >= 0.0, "--comm-timeout must be >= 0 (0 = off), got " << comm_timeout);
  ND_CHECK_INPUT(heartbeat_timeout >= 0.0, "--heartbeat-timeout must be >= 0 (0 = off), got " << heartbeat_timeout);
  const std::string csv_path = flags.get_string("csv");
  const bool fit = flags.get_bool("fit");
  const std::string fit_table = flags.get_string("fit-table");
  ND_CHECK_INPUT(fit || fit_table.empty(), "--fit-table needs --fit");
  ND_CHECK_INPUT(!(fit && compare), "--fit fits one curve; --impl compare sweeps six (fit each --impl alone)");
  const std::string load = flags.get_string("load");
  ND_CHECK_INPUT(load == "none" || load == "gemm", "unknown --load '" << load << "' (expected none or gemm)");
  const dist::GemmShape load_shape = dist::parse_gemm_shape(flags.get_string("load-shape"));
  if (load == "gemm") {
    ND_CHECK_INPUT(device.is_cuda(), "--load gemm needs --device cuda (a GEMM on the GPU beside the collectives)");
    ND_CHECK_INPUT(options.timing == dist::BenchTiming::Eager, "--load gemm needs --timing eager");
    ND_CHECK_INPUT(!compare && !matrix, "--load gemm times one collective's sweep (not --impl compare or p2p-matrix)");
  }
  dist::PeerOptions peer_options;
  if (peer) peer_options.mode = compare ? dist::PeerMode::Auto : dist::parse_peer_mode(impl);
  peer_options.buffer_bytes = parse_byte_size(flags.get_string("peer-buffer"));
  peer_options.one_shot_max_bytes = parse_byte_size(flags.get_string("one-shot-max-bytes"));
  peer_options.push_max_bytes = parse_byte_size(flags.get_string("push-max-bytes"));
  peer_options.table_path = flags.get_string("peer-table");
  peer_options.ring = options.ring_options;
  peer_options.auto_timing = options.timing;  // auto decides from times taken as this sweep takes them
  peer_options.auto_measure_max_bytes = options.max_bytes;  // and measured at every size the sweep reaches
  // The copy engines take every block of the sweep through the slots training uses (blocks larger
  // than a slot move in slot-sized pieces).
  ND_CHECK_INPUT(peer_options.buffer_bytes >= 16 && peer_options.buffer_bytes % 16 == 0,
                 "--peer-buffer must be a positive multiple of 16 bytes");

  std::unique_ptr<dist::Comm> comm = dist::make_world_comm(device, options.ring || impl == "auto" || compare);
  std::unique_ptr<dist::PeerComm> peer_comm;
  if (peer) {
    peer_comm = std::make_unique<dist::PeerComm>(*comm, peer_options);
    options.decorated = peer_comm.get();
  }
  // A stuck or vanished peer ends the sweep with one line instead of hanging it; each size is
  // timed on its own.
  std::unique_ptr<dist::BenchLoad> gemm_load;
  if (load == "gemm") {
    gemm_load = dist::make_gemm_load(comm->device(), load_shape);
    options.load = gemm_load.get();
  }
  const std::string suffix = gemm_load ? "+gemm" : "";
  std::unique_ptr<dist::FaultGuard> guard = fault_guard_for(*comm, comm_timeout, heartbeat_timeout);
  std::optional<dist::Watchdog::Scope> watched;
  if (guard) watched.emplace(guard->watchdog().watch("the first size of the sweep"));
  const bool printer = comm->rank() == 0;
  std::ofstream csv;
  if (printer && !csv_path.empty()) {
    csv.open(csv_path);
    ND_CHECK_INPUT(csv.good(), "cannot write --csv " << csv_path << " (is its directory there and writable?)");
    if (!matrix) csv << bench_comm_csv_header() << "\n";
  }
  if (matrix) {
    const int status = run_p2p_matrix_command(*comm, options, csv);
    watched.reset();
    if (guard) guard->finish();
    return status;
  }
  if (printer) {
    std::printf(
        "# nanodist bench-comm: op %s, impl %s, %d rank(s), backend %s on %s, dtype %s, %d warmup + %d iters, "
        "timing %s\n",
        dist::bench_op_name(options.op), compare ? "compare" : (impl_name(options, *comm) + suffix).c_str(),
        comm->size(), comm->backend(), comm->device().str().c_str(), dtype_name(options.dtype), options.warmup,
        options.iters, dist::bench_timing_name(options.timing));
    if (gemm_load) std::printf("# load: %s\n", gemm_load->describe().c_str());
    if (peer_comm && !peer_comm->peer_usable())
      std::printf("# no peer memory (%s): the all-reduce is the backend's\n", peer_comm->unusable_reason().c_str());
    if (peer_comm && peer_comm->peer_usable() && (impl == "auto" || compare)) {
      std::printf("# auto:");
      for (const auto& [largest, choice] : peer_comm->auto_table())
        std::printf(" %s up to %lld B;", dist::choice_name(choice), static_cast<long long>(largest));
      std::printf("\n");
    }
    if (!compare) std::printf("%s\n", bench_comm_header().c_str());
    std::fflush(stdout);
  }
  if (compare) {
    const int status = run_compare_command(*peer_comm, options, csv, [&](int64_t bytes) {
      if (!guard) return;
      watched.reset();
      watched.emplace(guard->watchdog().watch("the size after " + std::to_string(bytes) + " bytes"));
    });
    watched.reset();
    if (guard) guard->finish();
    return status;
  }
  int64_t wrong = 0;
  std::vector<dist::BenchCommRow> rows = dist::run_bench_comm(*comm, options, [&](const dist::BenchCommRow& row) {
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
    if (csv.is_open())
      csv << format_bench_comm_csv_as(row, options, *comm, impl_name(options, *comm) + suffix) << "\n" << std::flush;
  });
  watched.reset();
  if (guard) guard->finish();
  if (printer && wrong > 0) std::printf("# %lld wrong element(s) over all ranks\n", static_cast<long long>(wrong));
  if (fit && printer) {
    ND_CHECK_INPUT(rows.size() >= 2, "--fit needs a sweep of at least two sizes");
    std::vector<dist::AlphaBetaFit> pieces = dist::fit_rows_piecewise(rows);
    const dist::AlphaBetaFit line = dist::fit_rows(rows);
    std::printf("# one line: rms error %.1f%%, max %.1f%%; %zu piece(s), rms error %.1f%%:\n", 100 * line.rms_rel_err,
                100 * line.max_rel_err, pieces.size(), 100 * dist::CollectiveModel{pieces}.rms_rel_err());
    for (dist::AlphaBetaFit& piece : pieces) {
      piece.op = dist::bench_op_name(options.op);
      piece.impl = impl_name(options, *comm) + suffix;
      piece.nranks = comm->size();
      std::printf("# fit %lld..%lld B: time = %.3f us + bytes x %.4e us/B (%.1f GB/s algbw), rms error %.1f%%, max "
                  "%.1f%% over %d sizes\n",
                  static_cast<long long>(piece.min_bytes), static_cast<long long>(piece.max_bytes), piece.alpha_us,
                  piece.beta_us_per_byte, piece.beta_us_per_byte > 0 ? 1e-3 / piece.beta_us_per_byte : 0.0,
                  100 * piece.rms_rel_err, 100 * piece.max_rel_err, piece.points);
    }
    if (!fit_table.empty()) {
      const bool fresh = !std::ifstream(fit_table).good() || std::ifstream(fit_table).peek() == EOF;
      std::ofstream out(fit_table, std::ios::app);
      ND_CHECK_INPUT(out.good(), "cannot write --fit-table " << fit_table);
      if (fresh) out << dist::fit_csv_header() << "\n";
      for (const dist::AlphaBetaFit& piece : pieces) out << dist::format_fit_csv(piece) << "\n";
    }
  }
  return wrong > 0 ? 1 : 0;
}

}  // namespace

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

std::string format_bench_comm_csv(const dist::BenchCommRow& row, const dist::BenchCommOptions& options,
                                  const dist::Comm& comm) {
  return format_bench_comm_csv_as(row, options, comm, impl_name(options, comm));
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
