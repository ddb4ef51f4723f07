// The op table of op_table.h: rows come summed over the timed steps, largest first.
#include "cli/op_table.h"

#include <cstdio>

namespace nd::cli {

std::string format_op_table(const train::TrainResult& result) {
  if (result.op_timed_steps <= 0 || result.op_times.empty()) return "";
  const double steps = static_cast<double>(result.op_timed_steps);
  const double step_ms = result.op_timed_ms / steps;
  char line[512];
  std::string out;
  std::snprintf(line, sizeof(line), "op times (--op-times): mean of %lld steps of %.2f ms (wall)\n",
                static_cast<long long>(result.op_timed_steps), step_ms);
  out += line;
  std::snprintf(line, sizeof(line), "%-52s %7s %10s %7s %14s\n", "op", "calls", "ms/step", "share", "rate");
  out += line;
  double timed_ms = 0.0;
  for (const op_timer::Row& row : result.op_times) {
    const double ms = row.ms / steps;
    timed_ms += ms;
    char rate[32] = "-";
    const double flops_per_s = row.ms > 0 ? row.flops / (row.ms * 1e-3) : 0.0;
    if (flops_per_s >= 1e12)
      std::snprintf(rate, sizeof(rate), "%.1f TFLOP/s", flops_per_s / 1e12);
    else if (flops_per_s > 0)
      std::snprintf(rate, sizeof(rate), "%.1f GFLOP/s", flops_per_s / 1e9);
    else if (row.bytes > 0 && row.ms > 0)
      std::snprintf(rate, sizeof(rate), "%.0f GB/s", row.bytes / (row.ms * 1e-3) / 1e9);
    std::snprintf(line, sizeof(line), "%-52s %7.0f %10.3f %6.1f%% %14s\n", row.name.c_str(),
                  static_cast<double>(row.calls) / steps, ms, 100.0 * ms / step_ms, rate);
    out += line;
  }
  std::snprintf(line, sizeof(line),
                "%-52s %7s %10.3f %6.1f%%   (the rest: launch gaps, host work, communication)\n",
                "all timed ops", "", timed_ms, 100.0 * timed_ms / step_ms);
  out += line;
  return out;
}

}  // namespace nd::cli
