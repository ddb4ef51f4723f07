// What `nanodist watch` draws: the runs under a directory (one run's OUT, or an ablate or sweep
// OUT with a run in each OUT/<name>/seed<k>/), read from their metrics.jsonl, as text: one table
// row per run with the last loss, val loss, lr, gradient norm, tokens/s and MFU, and for each of
// those a sparkline of its history. Pure formatting; the command owns the terminal.
#pragma once
#include <string>
#include <vector>

namespace nd::experiments {

// The folders under `dir` (itself included) that hold a metrics.jsonl, sorted; `dir` alone when
// it holds one. nd::Error (input) when `dir` is not a directory.
std::vector<std::string> find_watched_runs(const std::string& dir);

// `values` (NaN = a gap) as at most `width` block characters (U+2581..U+2588), the last `width`
// values scaled between their min and max; a gap is a space.
std::string sparkline(const std::vector<double>& values, int width);

// The whole view of the runs under `dir`, `width` columns wide (sparklines shrink to fit).
std::string render_watch(const std::string& dir, int width);

}  // namespace nd::experiments
