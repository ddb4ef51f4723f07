// The step trace of step_trace.h: interval unions for the summary, JSON by hand (names are ours:
// op names, shapes, "allreduce 1.50 MB"), parts merged by rank 0 through the file system (like a
// checkpoint's parts).
#include "train/step_trace.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "data/atomic_file.h"
#include "tensor/error.h"
#if NANODIST_WITH_CUDA
#include "tensor/cuda_stream.h"
#endif

namespace nd::train {
namespace {

using Interval = std::pair<double, double>;

std::vector<Interval> merged(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (!out.empty() && i.first <= out.back().second) out.back().second = std::max(out.back().second, i.second);
    else out.push_back(i);
  }
  return out;
}

double length(const std::vector<Interval>& v) {
  double total = 0;
  for (const Interval& i : v) total += i.second - i.first;
  return total;
}

// Length of a (merged) minus its overlap with b (merged).
double outside(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double overlap = 0;
  size_t j = 0;
  for (const Interval& i : a) {
    while (j < b.size() && b[j].second <= i.first) ++j;
    for (size_t k = j; k < b.size() && b[k].first < i.second; ++k)
      overlap += std::min(i.second, b[k].second) - std::max(i.first, b[k].first);
  }
  return length(a) - overlap;
}

bool is_step_span(const op_timer::TraceEvent& e) { return e.track == "compute" && e.name.rfind("step ", 0) == 0; }

std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

std::string part_path(const std::string& path, int rank) { return path + ".part" + std::to_string(rank); }

}  // namespace

std::pair<int64_t, int64_t> parse_trace_steps(const std::string& text) {
  long long a = 0, b = 0;
  char rest = 0;
  const int n = std::sscanf(text.c_str(), "%lld:%lld%c", &a, &b, &rest);
  ND_CHECK_INPUT(n == 2 && a >= 1 && a <= b,
                 "--trace-steps must be FIRST:LAST with 1 <= FIRST <= LAST (e.g. 5:7), got '" << text << "'");
  return {a, b};
}

TraceSummary summarize_trace(const std::vector<op_timer::TraceEvent>& events) {
  TraceSummary s;
  if (events.empty()) return s;
  std::vector<Interval> compute, comm, all;
  double lo = events.front().start_us, hi = events.front().end_us;
  for (const op_timer::TraceEvent& e : events) {
    lo = std::min(lo, e.start_us);
    hi = std::max(hi, e.end_us);
    if (is_step_span(e)) continue;
    (e.track == "compute" ? compute : comm).push_back({e.start_us, e.end_us});
    all.push_back({e.start_us, e.end_us});
  }
  const auto c = merged(compute), m = merged(comm), both = merged(all);
  s.window_ms = (hi - lo) / 1000.0;
  s.compute_ms = length(c) / 1000.0;
  s.comm_ms = length(m) / 1000.0;
  s.exposed_comm_ms = outside(m, c) / 1000.0;
  s.idle_ms = s.window_ms - length(both) / 1000.0;
  return s;
}

std::string chrome_trace_events(const std::vector<op_timer::TraceEvent>& events, int rank) {
  std::map<std::string, int> tids = {{"compute", 0}};
  for (const op_timer::TraceEvent& e : events)
    if (!tids.count(e.track)) tids.emplace(e.track, static_cast<int>(tids.size()));
  std::ostringstream out;
  out << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << rank << ",\"args\":{\"name\":\"rank " << rank << "\"}}";
  for (const auto& [track, tid] : tids)
    out << ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << rank << ",\"tid\":" << tid << ",\"args\":{\"name\":\""
        << escaped(track == "compute" ? "compute stream" : "comm " + track) << "\"}}";
  char num[64];
  for (const op_timer::TraceEvent& e : events) {
    std::snprintf(num, sizeof(num), "\"ts\":%.3f,\"dur\":%.3f", e.start_us, std::max(0.0, e.end_us - e.start_us));
    out << ",\n{\"ph\":\"X\",\"cat\":\"" << (is_step_span(e) ? "step" : e.track == "compute" ? "op" : "comm")
        << "\",\"name\":\"" << escaped(e.name) << "\",\"pid\":" << rank << ",\"tid\":" << tids.at(e.track) << ","
        << num << "}";
  }
  return out.str();
}

StepTrace::StepTrace(std::string path, int64_t first, int64_t last, dist::Comm& world, int device)
    : path_(std::move(path)), first_(first), last_(last), world_(world), device_(device) {}

StepTrace::~StepTrace() {
  delete step_span_;
  if (op_timer::tracing()) op_timer::stop_trace();
}

void StepTrace::before_step(int64_t step) {
  if (step < first_ || step > last_) return;
  if (step == first_) {
    world_.barrier();  // the ranks' time origins within a barrier of each other
    op_timer::start_trace(device_);
  }
  void* stream = nullptr;
#if NANODIST_WITH_CUDA
  if (device_ >= 0) stream = compute_stream(device_);
#endif
  step_span_ = new op_timer::Span("step " + std::to_string(step), "compute", stream, device_);
}

std::vector<std::string> StepTrace::after_step(int64_t step) {
  if (step < first_ || step > last_) return {};
  delete step_span_;
  step_span_ = nullptr;
  if (step != last_) return {};
  op_timer::stop_trace();
  const std::vector<op_timer::TraceEvent> events = op_timer::take_trace();
  const int rank = world_.rank(), size = world_.size();
  {
    std::ofstream part(part_path(path_, rank), std::ios::trunc);
    part << chrome_trace_events(events, rank);
    ND_CHECK_INPUT(part.good(), "cannot write " << part_path(path_, rank));
  }
  const TraceSummary mine = summarize_trace(events);
  std::vector<double> all(static_cast<size_t>(size) * 5, 0.0);
  double* at = all.data() + static_cast<size_t>(rank) * 5;
  at[0] = mine.window_ms;
  at[1] = mine.compute_ms;
  at[2] = mine.comm_ms;
  at[3] = mine.exposed_comm_ms;
  at[4] = mine.idle_ms;
  world_.host_allreduce(all.data(), static_cast<int>(all.size()), dist::HostReduce::Sum);  // also: parts written
  std::vector<std::string> lines;
  if (rank != 0) return lines;
  std::string json = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  for (int r = 0; r < size; ++r) {
    std::ifstream in(part_path(path_, r));
    std::stringstream text;
    text << in.rdbuf();
    ND_CHECK_INPUT(in.good() || in.eof(), "cannot read " << part_path(path_, r));
    json += (r ? ",\n" : "") + text.str();
  }
  json += "\n]}\n";
  write_file_atomically(path_, json);
  for (int r = 0; r < size; ++r) std::filesystem::remove(part_path(path_, r));
  const int64_t steps = last_ - first_ + 1;
  lines.push_back("trace: steps " + std::to_string(first_) + "-" + std::to_string(last_) + " in " + path_ +
                  " (Perfetto: ui.perfetto.dev); per step:");
  char line[200];
  for (int r = 0; r < size; ++r) {
    const double* v = all.data() + static_cast<size_t>(r) * 5;
    std::snprintf(line, sizeof(line),
                  "trace: rank %d: compute %.2f ms | communication %.2f ms | exposed communication %.2f ms | "
                  "idle %.2f ms | step %.2f ms",
                  r, v[1] / steps, v[2] / steps, v[3] / steps, v[4] / steps, v[0] / steps);
    lines.push_back(line);
  }
  return lines;
}

}  // namespace nd::train
