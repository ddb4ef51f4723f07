// nanodist-lab's bench-comm (bench_comm_lab.h): the product's flags and setup, plus the compare run
// and the GEMM load.
#include "lab/bench_comm_lab.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>

#include "cli/bench_comm.h"
#include "cli/fault_guard_for.h"
#include "cli/threads.h"
#include "lab/allreduce_compare.h"
#include "lab/auto_table_file.h"
#include "lab/gemm_load.h"
#include "tensor/error.h"

namespace nd::lab {
namespace {

// Auto against each of its choices, a table of times per size and the ratio of auto to the best
// (the bar: at most 1.05), the CSV one row per (size, impl).
int run_compare(cli::BenchCommSetup& setup, dist::Comm& comm) {
  const dist::BenchCommOptions& options = setup.options;
  dist::PeerComm peer(comm, setup.peer);  // collective: registers its buffers and times auto's choices
  std::unique_ptr<dist::FaultGuard> guard = cli::fault_guard_for(comm, setup.comm_timeout, setup.heartbeat_timeout);
  std::optional<dist::Watchdog::Scope> watched;
  if (guard) watched.emplace(guard->watchdog().watch("the first size of the sweep"));
  const bool printer = comm.rank() == 0;
  std::ofstream csv;
  if (printer && !setup.csv_path.empty()) {
    csv.open(setup.csv_path);
    ND_CHECK_INPUT(csv.good(), "cannot write --csv " << setup.csv_path << " (is its directory there and writable?)");
    csv << cli::bench_comm_csv_header() << "\n";
  }
  if (printer) {
    std::printf("# nanodist bench-comm: op allreduce, impl compare, %d rank(s), backend %s on %s, dtype %s, %d warmup + "
                "%d iters, timing %s\n",
                comm.size(), comm.backend(), comm.device().str().c_str(), dtype_name(options.dtype), options.warmup,
                options.iters, dist::bench_timing_name(options.timing));
    if (!peer.peer_usable()) {
      std::printf("# no peer memory (%s): the all-reduce is the backend's\n", peer.unusable_reason().c_str());
    } else {
      std::printf("# auto:");
      for (const auto& [largest, choice] : peer.auto_table())
        std::printf(" %s up to %lld B;", dist::algorithm_name(choice), static_cast<long long>(largest));
      std::printf("\n");
    }
    std::printf("# time per call (us); - = the choice cannot run at this size; auto/best = auto's time over the fastest "
                "choice's\n%14s", "size");
    for (int i = 0; i < kCompareImpls; ++i) std::printf(" %10s", compare_impl_name(i));
    std::printf(" %9s %8s %9s %7s\n", "auto ran", "best", "auto/best", "#wrong");
    std::fflush(stdout);
  }
  int64_t wrong = 0;
  double worst = 0;
  int64_t worst_bytes = 0;
  run_allreduce_compare(peer, options, [&](const CompareRow& row) {
    int64_t row_wrong = 0;
    for (int i = 0; i < kCompareImpls; ++i) row_wrong += row.wrong[i];
    wrong += row_wrong;
    if (row.auto_over_best > worst) {
      worst = row.auto_over_best;
      worst_bytes = row.bytes;
    }
    if (guard) {
      watched.reset();
      watched.emplace(guard->watchdog().watch("the size after " + std::to_string(row.bytes) + " bytes"));
    }
    if (!printer) return;
    std::printf("%14lld", static_cast<long long>(row.bytes));
    for (int i = 0; i < kCompareImpls; ++i) {
      if (row.time_us[i] < 0) {
        std::printf(" %10s", "-");
      } else {
        std::printf(" %10.2f", row.time_us[i]);
      }
    }
    std::printf(" %9s %8s %9.3f %7lld\n", dist::algorithm_name(row.auto_choice), compare_impl_name(row.best),
                row.auto_over_best, static_cast<long long>(row_wrong));
    std::fflush(stdout);
    if (!csv.is_open()) return;
    for (int i = 0; i < kCompareImpls; ++i)
      if (row.time_us[i] >= 0)
        csv << cli::format_bench_comm_csv_as(row.as_bench_row(i, dtype_name(options.dtype), comm.size()), options, comm,
                                             compare_impl_name(i))
            << "\n";
    csv << std::flush;
  });
  watched.reset();
  if (guard) guard->finish();
  if (printer) {
    std::printf("# auto/best: at most %.3f (at %lld B); the bar is 1.05: %s\n", worst, static_cast<long long>(worst_bytes),
                worst <= 1.05 ? "met" : "not met");
    if (wrong > 0) std::printf("# %lld wrong element(s) over all ranks\n", static_cast<long long>(wrong));
  }
  return wrong > 0 ? 1 : 0;
}

}  // namespace

int run_lab_bench_comm(int argc, const char* const* argv) {
  cli::FlagSet set = cli::bench_comm_flags();
  set.group("lab")
      .add(cli::flag("load", "none",
                     "none, or gemm (GPU, eager timing: a bf16 GEMM of --load-shape runs back to back on another stream "
                     "of the same GPU for the whole timed window; the rows' and fits' impl gets '+gemm')"))
      .add(cli::flag("load-shape", "8192x8192x8192", "--load gemm: the GEMM's MxNxK"))
      .add(cli::flag("peer-table", "",
                     "--impl auto or compare: decide from this table instead of timing the choices at start: a sweep "
                     "saved by --csv (--impl compare's has every choice), or a fit table (--fit-table)"));
  cli::ParsedFlags flags = set.parse(argc, argv);
  cli::apply_thread_count(flags.threads);
  if (flags.help_requested) {
    std::cout << set.help() << "  --impl compare               allreduce: auto and each of its five choices at every "
                                "size, auto's time over the best choice's per size\n";
    return 0;
  }
  const bool compare = flags.get_string("impl") == "compare";
  if (compare) flags.values["impl"].texts = {"auto"};  // a PeerComm in auto mode runs every choice
  cli::BenchCommSetup setup = cli::bench_comm_setup(flags);
  const std::string table = flags.get_string("peer-table");
  if (!table.empty()) setup.peer.decide = file_decider(table, setup.options.timing);
  ND_CHECK_INPUT(!compare || (!setup.matrix && setup.options.op == dist::BenchOp::AllReduce),
                 "--impl compare is an all-reduce: use it with --op allreduce");
  ND_CHECK_INPUT(!(setup.fit && compare), "--fit fits one curve; --impl compare sweeps six (fit each --impl alone)");
  const std::string load = flags.get_string("load");
  ND_CHECK_INPUT(load == "none" || load == "gemm", "unknown --load '" << load << "' (expected none or gemm)");
  const GemmShape shape = parse_gemm_shape(flags.get_string("load-shape"));
  if (load == "gemm") {
    ND_CHECK_INPUT(setup.device.is_cuda(), "--load gemm needs --device cuda (a GEMM on the GPU beside the collectives)");
    ND_CHECK_INPUT(setup.options.timing == dist::BenchTiming::Eager, "--load gemm needs --timing eager");
    ND_CHECK_INPUT(!compare && !setup.matrix,
                   "--load gemm times one collective's sweep (not --impl compare or p2p-matrix)");
  }
  std::unique_ptr<dist::Comm> comm = cli::bench_comm_world(setup);
  if (compare) return run_compare(setup, *comm);
  std::unique_ptr<dist::BenchLoad> gemm_load;
  if (load == "gemm") gemm_load = make_gemm_load(comm->device(), shape);
  return cli::run_bench_comm(setup, *comm, gemm_load.get(), gemm_load ? "+gemm" : "");
}

}  // namespace nd::lab

