// The text of `nanodist watch`: a table of the runs' latest values and a sparkline per metric.
#include "experiments/run_watch.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "experiments/run_metrics.h"
#include "tensor/error.h"

namespace nd::experiments {
namespace {

namespace fs = std::filesystem;

std::string number(double v, const char* format) {
  if (!std::isfinite(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

std::string rate(double v) {
  if (!std::isfinite(v)) return "-";
  char buf[32];
  if (v >= 1e6) std::snprintf(buf, sizeof(buf), "%.2fM", v / 1e6);
  else if (v >= 1e3) std::snprintf(buf, sizeof(buf), "%.0fk", v / 1e3);
  else std::snprintf(buf, sizeof(buf), "%.0f", v);
  return buf;
}

std::string pad(std::string s, size_t n) {
  if (s.size() < n) s.resize(n, ' ');
  return s;
}

template <typename F>
std::vector<double> column(const std::vector<StepRecord>& steps, F f) {
  std::vector<double> out;
  for (const StepRecord& s : steps) out.push_back(f(s));
  return out;
}

}  // namespace

std::vector<std::string> find_watched_runs(const std::string& dir) {
  ND_CHECK_INPUT(fs::is_directory(dir), "watch: " << dir << " is not a directory (give a run's or an experiment's --out)");
  if (fs::exists(fs::path(dir) / "metrics.jsonl")) return {dir};
  std::vector<std::string> runs;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it->path().filename() == "metrics.jsonl") runs.push_back(it->path().parent_path().string());
  }
  std::sort(runs.begin(), runs.end());
  return runs;
}

std::string sparkline(const std::vector<double>& values, int width) {
  static const char* const kBlocks[] = {"\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587", "\u2588"};
  const size_t n = std::min(values.size(), static_cast<size_t>(std::max(width, 0)));
  const std::vector<double> last(values.end() - static_cast<std::ptrdiff_t>(n), values.end());
  double lo = INFINITY, hi = -INFINITY;
  for (double v : last)
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  std::string out;
  for (double v : last) {
    if (!std::isfinite(v)) {
      out += " ";
      continue;
    }
    const int level = hi > lo ? static_cast<int>(std::lround(7.0 * (v - lo) / (hi - lo))) : 3;
    out += kBlocks[std::clamp(level, 0, 7)];
  }
  return out;
}

std::string render_watch(const std::string& dir, int width) {
  const std::vector<std::string> runs = find_watched_runs(dir);
  std::ostringstream out;
  if (runs.empty()) {
    out << "watching " << dir << ": no metrics.jsonl yet\n";
    return out.str();
  }
  size_t name_width = 4;
  std::vector<std::string> names;
  for (const std::string& run : runs) {
    std::string name = fs::relative(run, dir).string();
    names.push_back(name == "." ? fs::path(run).filename().string() : name);
    name_width = std::max(name_width, names.back().size());
  }
  out << "watching " << dir << " (" << runs.size() << " run" << (runs.size() == 1 ? "" : "s") << ")\n\n"
      << pad("run", name_width) << "  " << pad("step", 7) << pad("loss", 9) << pad("val loss", 10) << pad("lr", 10)
      << pad("grad norm", 11) << pad("tok/s", 9) << pad("MFU", 7) << "state\n";
  std::vector<RunMetrics> metrics;
  for (size_t i = 0; i < runs.size(); ++i) {
    metrics.push_back(read_run_metrics(runs[i] + "/metrics.jsonl"));
    const RunMetrics& m = metrics.back();
    const StepRecord last = m.steps.empty() ? StepRecord{} : m.steps.back();
    const double val = m.evals.empty() ? NAN : m.evals.back().val_loss;
    out << pad(names[i], name_width) << "  " << pad(m.steps.empty() ? "-" : std::to_string(last.step), 7)
        << pad(m.steps.empty() ? "-" : number(last.loss, "%.4f"), 9) << pad(number(val, "%.4f"), 10)
        << pad(m.steps.empty() ? "-" : number(last.lr, "%.2e"), 10)
        << pad(m.steps.empty() ? "-" : number(last.grad_norm, "%.3g"), 11)
        << pad(m.steps.empty() ? "-" : rate(last.tok_per_s), 9)
        << pad(m.steps.empty() ? "-" : number(100.0 * last.mfu, "%.1f%%"), 7)
        << (m.finished ? "done" : m.steps.empty() ? "starting" : "running") << "\n";
  }
  // The history of each metric, one sparkline per run.
  const int spark = std::max(10, width - static_cast<int>(name_width) - 4);
  struct Series {
    const char* title;
    std::vector<double> (*of)(const RunMetrics&);
  };
  const Series series[] = {
      {"loss", [](const RunMetrics& m) { return column(m.steps, [](const StepRecord& s) { return s.loss; }); }},
      {"val loss",
       [](const RunMetrics& m) {
         std::vector<double> v;
         for (const EvalRecord& e : m.evals) v.push_back(e.val_loss);
         return v;
       }},
      {"lr", [](const RunMetrics& m) { return column(m.steps, [](const StepRecord& s) { return s.lr; }); }},
      {"grad norm", [](const RunMetrics& m) { return column(m.steps, [](const StepRecord& s) { return s.grad_norm; }); }},
      {"tok/s", [](const RunMetrics& m) { return column(m.steps, [](const StepRecord& s) { return s.tok_per_s; }); }},
      {"MFU", [](const RunMetrics& m) { return column(m.steps, [](const StepRecord& s) { return s.mfu; }); }},
  };
  for (const Series& s : series) {
    out << "\n" << s.title << " (last " << spark << " records; each line scaled to its own min..max)\n";
    for (size_t i = 0; i < runs.size(); ++i) {
      const std::vector<double> v = s.of(metrics[i]);
      const bool any = std::any_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
      out << "  " << pad(names[i], name_width) << "  " << (any ? sparkline(v, spark) : "-") << "\n";
    }
  }
  return out.str();
}

}  // namespace nd::experiments
