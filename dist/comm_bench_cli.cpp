// `nanodist bench-comm` flags (CLI.md) parsed with cxxopts; rank 0 prints the table and the CSV.
#include <cxxopts.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>

#include "dist/comm_bench.h"
#include "dist/fault_guard.h"
#include "dist/world.h"

namespace nd::dist {

namespace {

cxxopts::Options bench_comm_flags() {
  cxxopts::Options flags("nanodist bench-comm", "Collective bandwidth sweep (run under mpirun, one rank per GPU or CPU)");
  flags.add_options()
      ("op", "allreduce|sendrecv|allgather|reducescatter", cxxopts::value<std::string>()->default_value("allreduce"))
      ("impl", "native (MPI on CPU, NCCL on GPU) | ring (ours)", cxxopts::value<std::string>()->default_value("native"))
      ("device", "cpu|cuda", cxxopts::value<std::string>()->default_value("cpu"))
      ("dtype", "f32|bf16", cxxopts::value<std::string>()->default_value("f32"))
      ("min-bytes", "smallest message (8, 64K, 1M, ...)", cxxopts::value<std::string>()->default_value("8"))
      ("max-bytes", "largest message", cxxopts::value<std::string>()->default_value("1G"))
      ("factor", "size multiplier between rows", cxxopts::value<double>()->default_value("2"))
      ("warmup", "untimed iterations per size", cxxopts::value<int>()->default_value("5"))
      ("iters", "timed iterations per size", cxxopts::value<int>()->default_value("20"))
      ("csv", "also write the rows to this CSV file (rank 0)", cxxopts::value<std::string>()->default_value(""))
      ("slice-bytes", "ring: pipeline slice size (0 = automatic)", cxxopts::value<std::string>()->default_value("0"))
      ("direct-max-bytes", "ring: largest all-reduce sent directly to every rank (-1 = automatic)",
       cxxopts::value<std::string>()->default_value("-1"))
      ("comm-timeout", "seconds one size may take before the rank aborts and exits (0 = off)",
       cxxopts::value<double>()->default_value("600"))
      ("heartbeat-timeout", "seconds without a heartbeat after which a peer rank counts as gone (0 = off)",
       cxxopts::value<double>()->default_value("15"))
      ("h,help", "print the flags and their defaults");
  return flags;
}

int64_t parse_signed_bytes(const std::string& text) { return text == "-1" ? -1 : parse_byte_size(text); }

}  // namespace

int run_bench_comm_cli(int argc, char** argv) {
  cxxopts::Options flags = bench_comm_flags();
  cxxopts::ParseResult args;
  try {
    args = flags.parse(argc, argv);
  } catch (const cxxopts::exceptions::exception& e) {
    ND_FAIL("bench-comm: " << e.what());
  }
  if (args.count("help")) {
    std::cout << flags.help() << std::flush;
    return 0;
  }
  BenchCommOptions options;
  options.op = parse_bench_op(args["op"].as<std::string>());
  const std::string impl = args["impl"].as<std::string>();
  ND_CHECK(impl == "native" || impl == "ring", "unknown --impl '" << impl << "' (expected native or ring)");
  options.ring = impl == "ring";
  const Device device = parse_device(args["device"].as<std::string>());
  options.dtype = parse_dtype(args["dtype"].as<std::string>());
  options.min_bytes = parse_byte_size(args["min-bytes"].as<std::string>());
  options.max_bytes = parse_byte_size(args["max-bytes"].as<std::string>());
  options.factor = args["factor"].as<double>();
  options.warmup = args["warmup"].as<int>();
  options.iters = args["iters"].as<int>();
  options.ring_options.slice_bytes = parse_byte_size(args["slice-bytes"].as<std::string>());
  options.ring_options.direct_max_bytes = parse_signed_bytes(args["direct-max-bytes"].as<std::string>());
  const std::string csv_path = args["csv"].as<std::string>();
  FaultOptions faults;
  faults.comm_timeout_s = args["comm-timeout"].as<double>();
  faults.heartbeat_timeout_s = args["heartbeat-timeout"].as<double>();
  ND_CHECK(faults.comm_timeout_s >= 0, "--comm-timeout must be >= 0 (0 = off), got " << faults.comm_timeout_s);
  ND_CHECK(faults.heartbeat_timeout_s >= 0,
           "--heartbeat-timeout must be >= 0 (0 = off), got " << faults.heartbeat_timeout_s);

  std::unique_ptr<Comm> comm = make_world_comm(device, options.ring);
  const bool printer = comm->rank() == 0;
  // A stuck or vanished peer ends the sweep with one line instead of hanging it; each size is
  // timed on its own.
  std::unique_ptr<FaultGuard> guard;
  std::optional<Watchdog::Scope> watched;
  if (comm->size() > 1) {
    guard = std::make_unique<FaultGuard>(*comm, faults, [](const std::string& line) {
      std::fprintf(stderr, "nanodist: error: %s\n", line.c_str());
      std::fflush(stderr);
    });
    watched.emplace(guard->watchdog().watch("the first size of the sweep"));
  }
  std::ofstream csv;
  if (printer && !csv_path.empty()) {
    csv.open(csv_path);
    ND_CHECK(csv.good(), "cannot write --csv " << csv_path);
    csv << bench_comm_csv_header() << "\n";
  }
  if (printer) {
    std::printf("# nanodist bench-comm: op %s, impl %s, %d rank(s), backend %s on %s, dtype %s, %d warmup + %d iters\n",
                bench_op_name(options.op), impl.c_str(), comm->size(), comm->backend(), comm->device().str().c_str(),
                dtype_name(options.dtype), options.warmup, options.iters);
    std::printf("%s\n", bench_comm_header().c_str());
    std::fflush(stdout);
  }
  int64_t wrong = 0;
  run_bench_comm(*comm, options, [&](const BenchCommRow& row) {
    wrong += row.wrong;
    if (guard) {
      watched.reset();
      watched.emplace(guard->watchdog().watch("the size after " + std::to_string(row.bytes) + " bytes"));
    }
    if (!printer) return;
    std::printf("%s\n", format_bench_comm_row(row).c_str());
    std::fflush(stdout);
    if (csv.is_open()) csv << format_bench_comm_csv(row, options, *comm) << "\n" << std::flush;
  });
  watched.reset();
  if (guard) guard->finish();
  if (printer && wrong > 0) std::printf("# %lld wrong element(s) over all ranks\n", static_cast<long long>(wrong));
  return wrong > 0 ? 1 : 0;
}

}  // namespace nd::dist
