// `nanodist-lab bench-comm --peer-table FILE`: the `auto` all-reduce deciding from a table bench-comm
// saved instead of timing its choices at start: a sweep's CSV (`--csv`, the allreduce rows of
// oneshot, twoshot, ring, native and push; the lab's `--impl compare --csv` writes them all) or a
// fit table (`--fit-table`).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "dist/comm/bench/auto_choice.h"

namespace nd::lab {

// PeerOptions::decide from the file at `path` (which rows of a sweep: `timing`'s first).
std::function<dist::AutoTable(dist::PeerComm&)> file_decider(const std::string& path, dist::BenchTiming timing);

// From the file at `path` for `nranks` ranks (a sweep or a fit table, told apart by the header);
// the peer choices stop at `buffer_bytes`, push at `push_max_bytes`. An input error names the file.
dist::AutoTable auto_table_from_file(const std::string& path, int nranks, dist::BenchTiming timing,
                                     int64_t buffer_bytes, int64_t push_max_bytes);

// The decision from a saved bench-comm sweep (`csv_text`, a bench-comm CSV named `what` in
// errors): the allreduce rows of impls oneshot, twoshot, ring, native and push for `nranks` ranks,
// of `timing` where present (else the other timing's); a size between measured ones takes the next
// larger measured size's time, above the last an alpha-beta fit of the curve's upper half (ring
// and NCCL; the peer choices stop at `buffer_bytes`, push also at `push_max_bytes` where that is
// >= 0). Raises an input error naming the file and line on malformed rows, or when no row fits.
dist::AutoTable decide_from_sweep(const std::string& csv_text, const std::string& what, int nranks,
                                  dist::BenchTiming timing, int64_t buffer_bytes, int64_t push_max_bytes = -1);

}  // namespace nd::lab
