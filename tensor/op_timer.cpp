// The op timer of op_timer.h. Pending regions keep their events until collect() reads them; the
// events are pooled, so the steady state creates none.
#include "tensor/op_timer.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>

#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>

#include "tensor/cuda_check.h"
#include "tensor/cuda_stream.h"
#endif

namespace nd::op_timer {
namespace {

struct Pending {
  std::string name;
  Cost cost;
  bool on_gpu = false;
  int device = -1;
#if NANODIST_WITH_CUDA
  cudaEvent_t start = nullptr, stop = nullptr;
#endif
  std::chrono::steady_clock::time_point wall_start;
  double wall_ms = 0.0;
};

struct State {
  std::vector<Pending> pending;
  size_t used = 0;  // pending[0, used) are this round's regions; the rest keep pooled events
  std::map<std::string, Row> totals;
  bool paused = false;
};

State& state() {
  static State s;
  return s;
}

thread_local Cost next_cost;
thread_local bool has_next_cost = false;

}  // namespace

bool enabled() {
  static const bool on = [] {
    const char* v = std::getenv("NANODIST_KERNEL_TIMES");
    return v != nullptr && *v != '\0' && std::string(v) != "0";
  }();
  return on;
}

void note_next(Cost cost) {
  next_cost = std::move(cost);
  has_next_cost = true;
}

void Scope::begin(const char* name, const Tensor& on) {
  Cost cost;
  if (has_next_cost) cost = std::move(next_cost);
  has_next_cost = false;
  State& s = state();
  if (s.paused) return;
#if NANODIST_WITH_CUDA
  if (on.device().is_cuda() && compute_stream_capturing(on.device().index)) return;
#endif
  if (s.used == s.pending.size()) s.pending.emplace_back();
  slot_ = static_cast<int>(s.used++);
  Pending& p = s.pending[slot_];
  p.name = std::string(name) + " " + (cost.detail.empty() ? shape_str(on.shape()) : cost.detail);
  p.cost = cost;
  p.on_gpu = on.device().is_cuda();
  p.device = on.device().index;
  active_ = true;
#if NANODIST_WITH_CUDA
  if (p.on_gpu) {
    if (!p.start) {
      CUDA_CHECK(cudaEventCreate(&p.start));
      CUDA_CHECK(cudaEventCreate(&p.stop));
    }
    CUDA_CHECK(cudaEventRecord(p.start, compute_stream(p.device)));
    return;
  }
#endif
  p.wall_start = std::chrono::steady_clock::now();
}

void Scope::end() {
  Pending& p = state().pending[slot_];
#if NANODIST_WITH_CUDA
  if (p.on_gpu) {
    cudaEventRecord(p.stop, compute_stream(p.device));  // a destructor: no throw
    return;
  }
#endif
  p.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - p.wall_start).count();
}

std::vector<Row> collect() {
  State& s = state();
  for (size_t i = 0; i < s.used; ++i) {
    Pending& p = s.pending[i];
    double ms = p.wall_ms;
#if NANODIST_WITH_CUDA
    if (p.on_gpu) {
      float elapsed = 0.0f;
      CUDA_CHECK(cudaEventSynchronize(p.stop));
      CUDA_CHECK(cudaEventElapsedTime(&elapsed, p.start, p.stop));
      ms = elapsed;
    }
#endif
    Row& row = s.totals[p.name];
    row.name = p.name;
    row.calls += 1;
    row.ms += ms;
    row.flops += p.cost.flops;
    row.bytes += p.cost.bytes;
  }
  s.used = 0;
  std::vector<Row> rows;
  for (const auto& [name, row] : s.totals) rows.push_back(row);
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.ms > b.ms; });
  return rows;
}

void reset() {
  state().used = 0;
  state().totals.clear();
}

void pause(bool paused) { state().paused = paused; }

}  // namespace nd::op_timer
