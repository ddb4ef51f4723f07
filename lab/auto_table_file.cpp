// The auto tables of saved bench-comm files (auto_table_file.h): a sweep's allreduce rows read into
// one curve per choice, or a fit table's models, and decided as the measured curves are.
#include "lab/auto_table_file.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "dist/comm/bench/comm_model.h"

namespace nd::lab {

using namespace nd::dist;

namespace {

// Splits a CSV line at commas (bench-comm writes no quoted fields).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  std::string field;
  while (std::getline(in, field, ',')) fields.push_back(field);
  return fields;
}

// The all-reduce rows of a bench-comm CSV (`--impl compare --csv`, or one file per impl) for
// `nranks` ranks, as one curve per choice; rows of other ops, rank counts or impls are skipped.
// Where both timings are present, `timing`'s rows win.
void read_measured_table(const std::string& path, const std::string& text, int nranks, BenchTiming timing,
                         AutoCurve (&curves)[kAutoChoiceCount]) {
  std::stringstream in(text);
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = csv_fields(line);
  auto column = [&](const char* name) {
    const auto it = std::find(header.begin(), header.end(), name);
    ND_CHECK_INPUT(it != header.end(), path << ": no column " << name << " in the header");
    return static_cast<size_t>(it - header.begin());
  };
  const size_t op = column("op"), impl = column("impl"), ranks = column("nranks"), size = column("size"),
               time = column("time_us");
  const auto timing_at = std::find(header.begin(), header.end(), "timing");
  AutoCurve other[kAutoChoiceCount];  // rows of the other timing, used where `timing` has none
  for (int number = 2; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    const std::vector<std::string> f = csv_fields(line);
    ND_CHECK_INPUT(f.size() == header.size(), path << ":" << number << ": " << f.size() << " fields, expected "
                                                   << header.size());
    if (f[op] != "allreduce" || std::atoi(f[ranks].c_str()) != nranks) continue;
    const auto c = std::find_if(std::begin(kAutoChoices), std::end(kAutoChoices),
                                [&](Algorithm choice) { return f[impl] == algorithm_name(choice); });
    if (c == std::end(kAutoChoices)) continue;
    char* end_size = nullptr;
    char* end_time = nullptr;
    const long long bytes = std::strtoll(f[size].c_str(), &end_size, 10);
    const double us = std::strtod(f[time].c_str(), &end_time);
    ND_CHECK_INPUT(*end_size == '\0' && *end_time == '\0' && bytes > 0 && us > 0,
                   path << ":" << number << ": bad size or time_us");
    const bool same_timing = timing_at == header.end()
                                 ? timing == BenchTiming::Eager
                                 : f[static_cast<size_t>(timing_at - header.begin())] == bench_timing_name(timing);
    (same_timing ? curves : other)[c - std::begin(kAutoChoices)][bytes] = us;
  }
  for (int c = 0; c < kAutoChoiceCount; ++c)
    if (curves[c].empty()) curves[c] = other[c];
}

}  // namespace

AutoTable decide_from_sweep(const std::string& csv_text, const std::string& what, int nranks, BenchTiming timing,
                            int64_t buffer_bytes, int64_t push_max_bytes) {
  AutoCurve curves[kAutoChoiceCount];
  read_measured_table(what, csv_text, nranks, timing, curves);
  bool any = false;
  for (const AutoCurve& curve : curves) any = any || !curve.empty();
  ND_CHECK_INPUT(any, "the measured table " << what << " has no allreduce rows of impl oneshot, twoshot, ring, native or "
                                            << "push for " << nranks << " ranks");
  return decide_from_curves(curves, [&](Algorithm c) {
    if (!is_peer_choice(c)) return std::numeric_limits<int64_t>::max();
    return c == Algorithm::Push && push_max_bytes >= 0 ? std::min(push_max_bytes, buffer_bytes) : buffer_bytes;
  });
}

AutoTable auto_table_from_file(const std::string& path, int nranks, BenchTiming timing, int64_t buffer_bytes,
                               int64_t push_max_bytes) {
  std::ifstream file(path);
  ND_CHECK_INPUT(file.good(), "cannot read the table " << path);
  std::stringstream all;
  all << file.rdbuf();
  const std::string text = all.str();
  if (text.rfind("op,impl,device,nranks,size,", 0) == 0)  // a bench-comm sweep
    return decide_from_sweep(text, path, nranks, timing, buffer_bytes, push_max_bytes);
  const std::vector<AlphaBetaFit> table = parse_fit_table(text, path);
  bool any = false;
  for (Algorithm c : kAutoChoices) any = any || !find_model(table, "allreduce", algorithm_name(c), nranks).empty();
  ND_CHECK_INPUT(any, "the fit table " << path << " has no allreduce fits (oneshot, twoshot, ring, native, push)");
  return decide_by_size([&](Algorithm c, int64_t bytes) {
    const int64_t largest = !is_peer_choice(c)          ? std::numeric_limits<int64_t>::max()
                            : c == Algorithm::Push ? std::min(push_max_bytes, buffer_bytes)
                                                   : buffer_bytes;
    if (bytes > largest) return -1.0;
    const CollectiveModel model = find_model(table, "allreduce", algorithm_name(c), nranks);  // piecewise rows too
    return model.empty() ? -1.0 : model.predict_us(bytes, nranks);
  });
}

std::function<AutoTable(PeerComm&)> file_decider(const std::string& path, BenchTiming timing) {
  return [path, timing](PeerComm& peer) {
    return auto_table_from_file(path, peer.size(), timing, peer.options().buffer_bytes,
                                peer.largest_bytes(Algorithm::Push));
  };
}

}  // namespace nd::lab
