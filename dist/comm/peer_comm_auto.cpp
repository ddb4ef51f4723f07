// PeerComm's `auto` (peer_comm.h): the choice by size, from the five choices timed when the comm
// is made (powers of two up to each peer choice's largest size, timed like bench-comm, max over ranks; above
// it an alpha-beta fit of the ring's and NCCL's upper halves), from a sweep bench-comm saved
// (`--impl compare --csv`: the same curves, measured once) or from a fit table of bench-comm.
#include "dist/comm/peer_comm.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "dist/comm/bench_timing.h"

namespace nd::dist {

namespace {

constexpr AllReduceChoice kChoices[kAllReduceChoices] = {AllReduceChoice::OneShot, AllReduceChoice::TwoShot,
                                                         AllReduceChoice::Ring, AllReduceChoice::Native,
                                                         AllReduceChoice::Push};
constexpr int kLargestLog2 = 40;

}  // namespace

std::vector<std::pair<int64_t, AllReduceChoice>> decide_by_size(
    const std::function<double(AllReduceChoice, int64_t)>& time_us) {
  std::vector<std::pair<int64_t, AllReduceChoice>> table;
  for (int k = 3; k <= kLargestLog2; ++k) {
    const int64_t bytes = int64_t{1} << k;
    AllReduceChoice best = AllReduceChoice::Native;
    double best_time = -1;
    for (AllReduceChoice c : kChoices) {
      const double t = time_us(c, bytes);
      if (t >= 0 && (best_time < 0 || t < best_time)) {
        best = c;
        best_time = t;
      }
    }
    if (!table.empty() && table.back().second == best) {
      table.back().first = bytes;
    } else {
      table.emplace_back(bytes, best);
    }
  }
  return table;
}

namespace {

// One choice's time per size (max over ranks), from the start-up measurement or a saved sweep.
using Curve = std::map<int64_t, double>;

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
                         Curve (&curves)[kAllReduceChoices]) {
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
  Curve other[kAllReduceChoices];  // rows of the other timing, used where `timing` has none
  for (int number = 2; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    const std::vector<std::string> f = csv_fields(line);
    ND_CHECK_INPUT(f.size() == header.size(), path << ":" << number << ": " << f.size() << " fields, expected "
                                                   << header.size());
    if (f[op] != "allreduce" || std::atoi(f[ranks].c_str()) != nranks) continue;
    const auto c = std::find_if(std::begin(kChoices), std::end(kChoices),
                                [&](AllReduceChoice choice) { return f[impl] == choice_name(choice); });
    if (c == std::end(kChoices)) continue;
    char* end_size = nullptr;
    char* end_time = nullptr;
    const long long bytes = std::strtoll(f[size].c_str(), &end_size, 10);
    const double us = std::strtod(f[time].c_str(), &end_time);
    ND_CHECK_INPUT(*end_size == '\0' && *end_time == '\0' && bytes > 0 && us > 0,
                   path << ":" << number << ": bad size or time_us");
    const bool same_timing = timing_at == header.end()
                                 ? timing == BenchTiming::Eager
                                 : f[static_cast<size_t>(timing_at - header.begin())] == bench_timing_name(timing);
    (same_timing ? curves : other)[c - std::begin(kChoices)][bytes] = us;
  }
  for (int c = 0; c < kAllReduceChoices; ++c)
    if (curves[c].empty()) curves[c] = other[c];
}

// The decision from per-choice curves. A size between measured ones takes the next larger
// measured size's time; above a curve's last size (ring and NCCL only: the peer choices stop at
// `largest(choice)`) an alpha-beta fit of the curve's upper half extrapolates.
std::vector<std::pair<int64_t, AllReduceChoice>> decide_from_curves(const Curve (&curves)[kAllReduceChoices],
                                                                    const std::function<int64_t(AllReduceChoice)>& largest) {
  AlphaBetaFit upper[kAllReduceChoices];
  for (int c = 0; c < kAllReduceChoices; ++c) {
    std::vector<int64_t> xs;
    std::vector<double> ts;
    size_t i = 0;
    for (const auto& [bytes, us] : curves[c])
      if (i++ >= curves[c].size() / 2) {
        xs.push_back(bytes);
        ts.push_back(us);
      }
    if (xs.size() >= 2 && xs.front() != xs.back()) upper[c] = fit_alpha_beta(xs, ts);
  }
  return decide_by_size([&](AllReduceChoice c, int64_t bytes) {
    const int ci = static_cast<int>(std::find(std::begin(kChoices), std::end(kChoices), c) - std::begin(kChoices));
    const Curve& curve = curves[ci];
    if (curve.empty() || bytes > largest(c)) return -1.0;
    const auto at = curve.lower_bound(bytes);
    if (at != curve.end()) return at->second;
    if (is_peer_choice(c) || upper[ci].points == 0) return -1.0;
    return upper[ci].alpha_us + upper[ci].beta_us_per_byte * static_cast<double>(bytes);
  });
}

}  // namespace

std::vector<std::pair<int64_t, AllReduceChoice>> decide_from_sweep(const std::string& csv_text, const std::string& what,
                                                                   int nranks, BenchTiming timing, int64_t buffer_bytes,
                                                                   int64_t push_max_bytes) {
  Curve curves[kAllReduceChoices];
  read_measured_table(what, csv_text, nranks, timing, curves);
  bool any = false;
  for (const Curve& curve : curves) any = any || !curve.empty();
  ND_CHECK_INPUT(any, "the measured table " << what << " has no allreduce rows of impl oneshot, twoshot, ring, native or "
                                            << "push for " << nranks << " ranks");
  return decide_from_curves(curves, [&](AllReduceChoice c) {
    if (!is_peer_choice(c)) return std::numeric_limits<int64_t>::max();
    return c == AllReduceChoice::Push && push_max_bytes >= 0 ? std::min(push_max_bytes, buffer_bytes) : buffer_bytes;
  });
}

void PeerComm::build_auto_table() {
  const int n = size();
  std::string text;
  if (!options_.table_path.empty()) {
    std::ifstream file(options_.table_path);
    ND_CHECK_INPUT(file.good(), "cannot read the table " << options_.table_path);
    std::stringstream all;
    all << file.rdbuf();
    text = all.str();
  }
  const bool measured_table = text.rfind("op,impl,device,nranks,size,", 0) == 0;  // a bench-comm sweep
  if (!text.empty() && !measured_table) {
    const std::vector<AlphaBetaFit> table = parse_fit_table(text, options_.table_path);
    bool any = false;
    for (AllReduceChoice c : kChoices) any = any || !find_model(table, "allreduce", choice_name(c), n).empty();
    ND_CHECK_INPUT(any, "the fit table " << options_.table_path
                                         << " has no allreduce fits (oneshot, twoshot, ring, native, push)");
    auto_table_ = decide_by_size([&](AllReduceChoice c, int64_t bytes) {
      if (bytes > largest_bytes(c)) return -1.0;
      const CollectiveModel model = find_model(table, "allreduce", choice_name(c), n);  // piecewise rows too
      return model.empty() ? -1.0 : model.predict_us(bytes, n);
    });
    return;
  }
  if (measured_table) {
    auto_table_ = decide_from_sweep(text, options_.table_path, n, options_.auto_timing, options_.buffer_bytes,
                                    largest_bytes(AllReduceChoice::Push));
    return;
  }
  // Measured here: powers of two from 8 B to the registered buffer (ring and NCCL on to
  // auto_measure_max_bytes), each choice, max over ranks; -1 where a peer choice cannot run
  // (above its largest size).
  const int64_t largest = std::max(options_.buffer_bytes, options_.auto_measure_max_bytes);
  std::vector<int64_t> sizes;
  for (int64_t b = 8; b <= largest; b *= 2) sizes.push_back(b);
  std::vector<double> measured(kAllReduceChoices * sizes.size(), -1.0);  // [choice][size]
  Tensor scratch = Tensor::zeros({std::max<int64_t>(1, sizes.back() / 4)}, DType::F32, device());
  // Timed as bench-comm times them (dist/comm/bench_timing.h): a batch launched back to back with
  // the GPU's clock around it. Small sizes get more calls: their times are microseconds and
  // the choices there differ by a few of them.
  for (size_t s = 0; s < sizes.size(); ++s)
    for (int c = 0; c < kAllReduceChoices; ++c) {
      if (sizes[s] > largest_bytes(kChoices[c])) continue;
      Tensor part = scratch.narrow(0, std::max<int64_t>(1, sizes[s] / 4));
      auto launch = [&] { return allreduce_with(kChoices[c], part, ReduceOp::Sum); };
      launch().wait();  // the first call of a layout agrees with the other ranks on the host
      const int iters = sizes[s] <= (int64_t{1} << 20) ? 50 : 10;
      measured[c * sizes.size() + s] = 1e6 * time_launches(inner_, options_.auto_timing, 3, iters, launch);
    }
  inner_.host_allreduce(measured.data(), static_cast<int>(measured.size()), HostReduce::Max);
  Curve curves[kAllReduceChoices];
  for (int c = 0; c < kAllReduceChoices; ++c)
    for (size_t s = 0; s < sizes.size(); ++s)
      if (measured[c * sizes.size() + s] >= 0) curves[c][sizes[s]] = measured[c * sizes.size() + s];
  auto_table_ = decide_from_curves(curves, [this](AllReduceChoice c) { return largest_bytes(c); });
}

}  // namespace nd::dist
