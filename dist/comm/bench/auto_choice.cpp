// PeerComm's `auto` table (auto_choice.h): the five choices timed on the comm (powers of two up to
// each peer choice's largest size, timed like bench-comm, max over ranks; above it an alpha-beta
// fit of the ring's and NCCL's upper halves).
#include "dist/comm/bench/auto_choice.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <vector>

#include "dist/comm/bench/comm_model.h"

namespace nd::dist {

namespace {

constexpr int kLargestLog2 = 40;

}  // namespace

AutoTable decide_by_size(const std::function<double(Algorithm, int64_t)>& time_us) {
  AutoTable table;
  for (int k = 3; k <= kLargestLog2; ++k) {
    const int64_t bytes = int64_t{1} << k;
    Algorithm best = Algorithm::Native;
    double best_time = -1;
    for (Algorithm c : kAutoChoices) {
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

// The decision from per-choice curves. A size between measured ones takes the next larger
// measured size's time; above a curve's last size (ring and NCCL only: the peer choices stop at
// `largest(choice)`) an alpha-beta fit of the curve's upper half extrapolates.
AutoTable decide_from_curves(const AutoCurve (&curves)[kAutoChoiceCount],
                             const std::function<int64_t(Algorithm)>& largest) {
  AlphaBetaFit upper[kAutoChoiceCount];
  for (int c = 0; c < kAutoChoiceCount; ++c) {
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
  return decide_by_size([&](Algorithm c, int64_t bytes) {
    const int ci = static_cast<int>(std::find(std::begin(kAutoChoices), std::end(kAutoChoices), c) - std::begin(kAutoChoices));
    const AutoCurve& curve = curves[ci];
    if (curve.empty() || bytes > largest(c)) return -1.0;
    const auto at = curve.lower_bound(bytes);
    if (at != curve.end()) return at->second;
    if (is_peer_choice(c) || upper[ci].points == 0) return -1.0;
    return upper[ci].alpha_us + upper[ci].beta_us_per_byte * static_cast<double>(bytes);
  });
}

AutoTable measure_auto_table(PeerComm& peer, BenchTiming timing, int64_t measure_max_bytes) {
  Comm& inner = peer.inner();
  // Powers of two from 8 B to the registered buffer (ring and NCCL on to measure_max_bytes), each
  // choice, max over ranks; -1 where a peer choice cannot run (above its largest size).
  const int64_t largest = std::max(peer.options().buffer_bytes, measure_max_bytes);
  std::vector<int64_t> sizes;
  for (int64_t b = 8; b <= largest; b *= 2) sizes.push_back(b);
  std::vector<double> measured(kAutoChoiceCount * sizes.size(), -1.0);  // [choice][size]
  Tensor scratch = Tensor::zeros({std::max<int64_t>(1, sizes.back() / 4)}, DType::F32, peer.device());
  // Timed as bench-comm times them (bench_timing.h): a batch launched back to back with the GPU's
  // clock around it. Small sizes get more calls: their times are microseconds and the choices
  // there differ by a few of them.
  for (size_t s = 0; s < sizes.size(); ++s)
    for (int c = 0; c < kAutoChoiceCount; ++c) {
      if (sizes[s] > peer.largest_bytes(kAutoChoices[c])) continue;
      Tensor part = scratch.narrow(0, std::max<int64_t>(1, sizes[s] / 4));
      auto launch = [&] { return peer.allreduce_with(kAutoChoices[c], part, ReduceOp::Sum); };
      launch().wait();  // the first call of a layout agrees with the other ranks on the host
      const int iters = sizes[s] <= (int64_t{1} << 20) ? 50 : 10;
      measured[c * sizes.size() + s] = 1e6 * time_launches(inner, timing, 3, iters, launch);
    }
  inner.host_allreduce(measured.data(), static_cast<int>(measured.size()), HostReduce::Max);
  AutoCurve curves[kAutoChoiceCount];
  for (int c = 0; c < kAutoChoiceCount; ++c)
    for (size_t s = 0; s < sizes.size(); ++s)
      if (measured[c * sizes.size() + s] >= 0) curves[c][sizes[s]] = measured[c * sizes.size() + s];
  return decide_from_curves(curves, [&peer](Algorithm c) { return peer.largest_bytes(c); });
}

std::function<AutoTable(PeerComm&)> auto_decider(BenchTiming timing, int64_t measure_max_bytes) {
  return [timing, measure_max_bytes](PeerComm& peer) { return measure_auto_table(peer, timing, measure_max_bytes); };
}

}  // namespace nd::dist
