// How `nanodist bench-comm` reads sizes and writes rows: nccl-tests' text columns and a CSV that
// also names op, impl, device and ranks. The sweep itself is dist::run_bench_comm.
#pragma once
#include <cstdint>
#include <string>

#include "dist/comm/comm_bench.h"

namespace nd::cli {

// "8", "64K", "16M", "1G", "4G" (powers of 1024; an optional trailing B); input error otherwise.
int64_t parse_byte_size(const std::string& text);

std::string bench_comm_header();  // size count type redop time(us) algbw(GB/s) busbw(GB/s) #wrong
std::string format_bench_comm_row(const dist::BenchCommRow& row);
std::string bench_comm_csv_header();
std::string format_bench_comm_csv(const dist::BenchCommRow& row, const dist::BenchCommOptions& options,
                                  const dist::Comm& comm);
// The same row under another implementation's name (--impl compare writes five per size).
std::string format_bench_comm_csv_as(const dist::BenchCommRow& row, const dist::BenchCommOptions& options,
                                     const dist::Comm& comm, const std::string& impl);
// --op p2p-matrix: one row per ordered pair (latency at min_bytes, bandwidth at max_bytes).
std::string p2p_csv_header();
std::string format_p2p_csv(const dist::P2pCell& cell, const dist::BenchCommOptions& options, const dist::Comm& comm);

}  // namespace nd::cli
