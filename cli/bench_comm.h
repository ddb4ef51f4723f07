// `nanodist bench-comm`: its flags, what they set up, the sweep run and printed on rank 0, and how
// sizes are read and rows written (nccl-tests' text columns and a CSV that also names op, impl,
// device and ranks). The sweep itself is dist::run_bench_comm. The lab build's bench-comm
// (lab/lab_main.cpp) reuses these with a load beside the sweep and its compare runs.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "cli/flags.h"
#include "dist/comm/bench/comm_bench.h"
#include "dist/comm/peer_comm.h"

namespace nd::cli {

// What bench-comm's flags ask for, checked.
struct BenchCommSetup {
  dist::BenchCommOptions options;
  dist::PeerOptions peer;  // its mode set where the impl is a peer one; auto decides as the sweep times
  std::string impl;        // --impl
  bool peer_impl = false;  // oneshot, twoshot, peer, push or auto: a PeerComm over the world runs the calls
  bool matrix = false;     // --op p2p-matrix
  Device device = Device::cpu();
  std::string csv_path, fit_table;
  bool fit = false;
  double comm_timeout = 600, heartbeat_timeout = 15;
};

FlagSet bench_comm_flags();
BenchCommSetup bench_comm_setup(const ParsedFlags& flags);
// The world communicator the setup asks for (collective under mpirun).
std::unique_ptr<dist::Comm> bench_comm_world(const BenchCommSetup& setup);
// The sweep (or the p2p matrix) on `comm`, its rows printed and written on rank 0; its fits with
// --fit. `load` runs beside the timed calls, `suffix` marks the impl of its rows. Collective.
// Returns the exit status (1 when any element came out wrong).
int run_bench_comm(BenchCommSetup& setup, dist::Comm& comm, dist::BenchLoad* load = nullptr,
                   const std::string& suffix = "");

// "8", "64K", "16M", "1G", "4G" (powers of 1024; an optional trailing B); input error otherwise.
int64_t parse_byte_size(const std::string& text);

std::string bench_comm_header();  // size count type redop time(us) algbw(GB/s) busbw(GB/s) #wrong
std::string format_bench_comm_row(const dist::BenchCommRow& row);
std::string bench_comm_csv_header();
// A row under the implementation name `impl` (the lab's compare writes six per size).
std::string format_bench_comm_csv_as(const dist::BenchCommRow& row, const dist::BenchCommOptions& options,
                                     const dist::Comm& comm, const std::string& impl);
// --op p2p-matrix: one row per ordered pair (latency at min_bytes, bandwidth at max_bytes).
std::string p2p_csv_header();
std::string format_p2p_csv(const dist::P2pCell& cell, const dist::BenchCommOptions& options, const dist::Comm& comm);

}  // namespace nd::cli
