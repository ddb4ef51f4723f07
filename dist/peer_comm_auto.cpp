// PeerComm's `auto` (peer_comm.h): the choice by size, from the four choices timed when the comm
// is made (powers of two up to the registered buffer, timed like bench-comm, max over ranks; above
// it an alpha-beta fit of the ring's and NCCL's upper halves) or from a fit table written by
// bench-comm.
#include "dist/peer_comm.h"

#include <algorithm>
#include <functional>

#include "dist/bench_timing.h"

namespace nd::dist {

namespace {

constexpr AllReduceChoice kChoices[] = {AllReduceChoice::OneShot, AllReduceChoice::TwoShot, AllReduceChoice::Ring,
                                        AllReduceChoice::Native};
constexpr int kLargestLog2 = 40;

bool is_peer_choice(AllReduceChoice choice) {
  return choice == AllReduceChoice::OneShot || choice == AllReduceChoice::TwoShot;
}

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

void PeerComm::build_auto_table() {
  const int n = size();
  std::function<double(AllReduceChoice, int64_t)> time_us;
  std::vector<AlphaBetaFit> table;
  // Measured: sizes 8 B .. buffer_bytes by powers of two, each choice, max over ranks.
  std::vector<int64_t> sizes;
  std::vector<double> measured;  // [choice][size]
  if (!options_.table_path.empty()) {
    table = read_fit_table(options_.table_path);
    bool any = false;
    for (AllReduceChoice c : kChoices) any = any || find_fit(table, "allreduce", choice_name(c), n) != nullptr;
    ND_CHECK_INPUT(any, "the fit table " << options_.table_path << " has no allreduce fits (oneshot, twoshot, ring, native)");
    time_us = [&](AllReduceChoice c, int64_t bytes) {
      if (is_peer_choice(c) && bytes > options_.buffer_bytes) return -1.0;
      const AlphaBetaFit* fit = find_fit(table, "allreduce", choice_name(c), n);
      return fit ? fit->predict_us(bytes, n) : -1.0;
    };
  } else {
    for (int64_t b = 8; b <= options_.buffer_bytes; b *= 2) sizes.push_back(b);
    measured.assign(4 * sizes.size(), 0.0);
    Tensor scratch = Tensor::zeros({options_.buffer_bytes / 4}, DType::F32, device());
    // Timed as bench-comm times them (dist/bench_timing.h): a batch launched back to back with
    // the GPU's clock around it. Small sizes get more calls: their times are microseconds and
    // the choices there differ by a few of them.
    for (size_t s = 0; s < sizes.size(); ++s)
      for (int c = 0; c < 4; ++c) {
        Tensor part = scratch.narrow(0, std::max<int64_t>(1, sizes[s] / 4));
        auto launch = [&] { return allreduce_with(kChoices[c], part, ReduceOp::Sum); };
        launch().wait();  // the first call of a layout agrees with the other ranks on the host
        const int iters = sizes[s] <= (int64_t{1} << 20) ? 50 : 10;
        measured[c * sizes.size() + s] = 1e6 * time_launches(inner_, options_.auto_timing, 3, iters, launch);
      }
    inner_.host_allreduce(measured.data(), static_cast<int>(measured.size()), HostReduce::Max);
    // decide_by_size asks at powers of two, which are the measured sizes; above them (ring and
    // NCCL only) an alpha-beta fit of each curve's upper half extrapolates.
    std::vector<AlphaBetaFit> upper(4);
    for (int c = 0; c < 4; ++c) {
      const size_t from = sizes.size() / 2;
      std::vector<int64_t> xs(sizes.begin() + from, sizes.end());
      std::vector<double> ts(measured.begin() + c * sizes.size() + from, measured.begin() + (c + 1) * sizes.size());
      upper[c] = fit_alpha_beta(xs, ts);
    }
    time_us = [&, upper](AllReduceChoice c, int64_t bytes) {
      const int ci = static_cast<int>(std::find(std::begin(kChoices), std::end(kChoices), c) - std::begin(kChoices));
      if (bytes > sizes.back()) {
        if (is_peer_choice(c)) return -1.0;
        return upper[ci].alpha_us + upper[ci].beta_us_per_byte * static_cast<double>(bytes);
      }
      size_t s = 0;
      while (sizes[s] < bytes) ++s;
      return measured[ci * sizes.size() + s];
    };
  }
  auto_table_ = decide_by_size(time_us);
}

}  // namespace nd::dist
