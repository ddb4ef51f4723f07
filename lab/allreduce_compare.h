// `nanodist-lab bench-comm --impl compare`: the `auto` all-reduce against each of its choices
// (one-shot, two-shot, our ring, NCCL, push) at every size of one sweep, all timed alike
// (dist/comm/bench/bench_timing.h; in three interleaved rounds, each keeping its fastest) and
// checked against the closed form, with auto's time over the best choice's per size. A peer choice that cannot run at a size (no peer
// memory, larger than its largest size: PeerComm::largest_bytes) is left out there.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dist/comm/bench/comm_bench.h"
#include "dist/comm/peer_comm.h"

namespace nd::lab {

// The compared implementations, in column order: the five choices, then auto.
constexpr int kCompareImpls = dist::kAutoChoiceCount + 1;
const char* compare_impl_name(int i);  // oneshot, twoshot, ring, native, push, auto
dist::Algorithm compare_choice(int i);  // column i < dist::kAutoChoiceCount's choice

struct CompareRow {
  int64_t bytes = 0;
  int64_t count = 0;
  double time_us[kCompareImpls] = {};  // fastest round, max over ranks; < 0 where the choice cannot run
  int64_t wrong[kCompareImpls] = {};   // summed over ranks
  dist::Algorithm auto_choice = dist::Algorithm::Native;  // what auto ran at this size
  int best = 3;                        // the fastest of the five choices (3: native)
  double auto_over_best = 1.0;         // time_us[auto] / time_us[best]
  // The row as BenchCommRows, one per implementation that ran (for the CSV).
  dist::BenchCommRow as_bench_row(int impl, const std::string& type, int nranks) const;
};

// The sweep of options.min_bytes .. options.max_bytes (all-reduce, Sum) on `peer`, a PeerComm in
// auto mode over the bench's comm. Collective; `on_row` sees each size as it finishes.
std::vector<CompareRow> run_allreduce_compare(dist::PeerComm& peer, const dist::BenchCommOptions& options,
                                              const std::function<void(const CompareRow&)>& on_row = {});

// The fastest of the choices that ran (time >= 0) and auto's time over it; auto_over_best is 0
// when no choice ran. Fills `best` and `auto_over_best` of `row`.
void rate_against_best(CompareRow& row);

}  // namespace nd::lab
