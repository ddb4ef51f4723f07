// The op timer of op_timer.h. Pending regions keep their events until collect() reads them; the
// events are pooled, so the steady state creates none.
#include "tensor/op_timer.h"
#include "tensor/op_trace.h"

#include <algorithm>
#include <chrono>
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

// A span of the timeline (op_trace.h): its events (pooled like the regions'), or its wall times.
struct TraceSlot {
  std::string name, track;
  bool on_gpu = false;
  int device = -1;
#if NANODIST_WITH_CUDA
  cudaEvent_t start = nullptr, stop = nullptr;
#endif
  double wall_start_us = 0, wall_end_us = 0;
};

struct State {
  std::vector<Pending> pending;
  size_t used = 0;  // pending[0, used) are this round's regions; the rest keep pooled events
  std::map<std::string, Row> totals;
  bool paused = false;
  bool table = false;  // set_table: the totals are kept
  // The timeline: recording, its origin, the spans recorded [0, trace_used) and pooled ones.
  bool tracing = false;
  int trace_device = -1;
#if NANODIST_WITH_CUDA
  cudaEvent_t origin = nullptr;
#endif
  std::chrono::steady_clock::time_point wall_origin;
  std::vector<TraceSlot> trace;
  size_t trace_used = 0;
};

State& state() {
  static State s;
  return s;
}

thread_local Cost next_cost;
thread_local bool has_next_cost = false;

bool table_enabled() { return state().table; }

double wall_us(const State& s) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - s.wall_origin).count();
}

// Starts a span of the timeline on `cuda_stream` (nullptr: the wall clock); -1 when not tracing.
int begin_span(std::string name, const std::string& track, void* cuda_stream, int device) {
  State& s = state();
  if (!s.tracing) return -1;
#if NANODIST_WITH_CUDA
  if (cuda_stream) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(static_cast<cudaStream_t>(cuda_stream), &status) != cudaSuccess ||
        status != cudaStreamCaptureStatusNone)
      return -1;
  }
#endif
  if (s.trace_used == s.trace.size()) s.trace.emplace_back();
  const int slot = static_cast<int>(s.trace_used++);
  TraceSlot& t = s.trace[slot];
  t.name = std::move(name);
  t.track = track;
  t.on_gpu = cuda_stream != nullptr;
  t.device = device;
#if NANODIST_WITH_CUDA
  if (t.on_gpu) {
    if (!t.start) {
      CUDA_CHECK(cudaEventCreate(&t.start));
      CUDA_CHECK(cudaEventCreate(&t.stop));
    }
    CUDA_CHECK(cudaEventRecord(t.start, static_cast<cudaStream_t>(cuda_stream)));
    return slot;
  }
#endif
  t.wall_start_us = wall_us(s);
  return slot;
}

void end_span(int slot, void* cuda_stream) {
  if (slot < 0) return;
  State& s = state();
  TraceSlot& t = s.trace[slot];
#if NANODIST_WITH_CUDA
  if (t.on_gpu) {
    cudaEventRecord(t.stop, static_cast<cudaStream_t>(cuda_stream));  // a destructor: no throw
    return;
  }
#endif
  (void)cuda_stream;
  t.wall_end_us = wall_us(s);
}

thread_local std::vector<int> open_spans;  // the trace slots of the open regions (Scope), innermost last

}  // namespace

bool enabled() { return table_enabled() || state().tracing; }

void start_trace(int device) {
  State& s = state();
  s.tracing = true;
  s.trace_used = 0;
  s.trace_device = device;
  s.wall_origin = std::chrono::steady_clock::now();
#if NANODIST_WITH_CUDA
  if (device >= 0) {
    if (!s.origin) CUDA_CHECK(cudaEventCreate(&s.origin));
    CUDA_CHECK(cudaEventRecord(s.origin, compute_stream(device)));
  }
#endif
}

void stop_trace() { state().tracing = false; }

bool tracing() { return state().tracing; }

std::vector<TraceEvent> take_trace() {
  State& s = state();
  std::vector<TraceEvent> out;
  for (size_t i = 0; i < s.trace_used; ++i) {
    TraceSlot& t = s.trace[i];
    TraceEvent e{t.name, t.track, t.wall_start_us, t.wall_end_us};
#if NANODIST_WITH_CUDA
    if (t.on_gpu) {
      float a = 0.0f, b = 0.0f;
      CUDA_CHECK(cudaEventSynchronize(t.stop));
      CUDA_CHECK(cudaEventElapsedTime(&a, s.origin, t.start));
      CUDA_CHECK(cudaEventElapsedTime(&b, s.origin, t.stop));
      e.start_us = 1000.0 * a;
      e.end_us = 1000.0 * b;
    }
#endif
    out.push_back(std::move(e));
  }
  s.trace_used = 0;
  return out;
}

Span::Span(const std::string& name, const std::string& track, void* cuda_stream, int device)
    : slot_(begin_span(name, track, cuda_stream, device)), stream_(cuda_stream) {}

Span::~Span() { end_span(slot_, stream_); }


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
  std::string full = std::string(name) + " " + (cost.detail.empty() ? shape_str(on.shape()) : cost.detail);
  void* stream = nullptr;
#if NANODIST_WITH_CUDA
  if (on.device().is_cuda()) stream = compute_stream(on.device().index);
#endif
  // Scopes nest (RAII), so each one's timeline span is the top of this stack when it ends.
  open_spans.push_back(s.tracing ? begin_span(full, "compute", stream, on.device().index) : -1);
  active_ = true;
  slot_ = -1;
  if (!table_enabled()) return;
  if (s.used == s.pending.size()) s.pending.emplace_back();
  slot_ = static_cast<int>(s.used++);
  Pending& p = s.pending[slot_];
  p.name = std::move(full);
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
  const int traced = open_spans.empty() ? -1 : open_spans.back();
  if (!open_spans.empty()) open_spans.pop_back();
  if (traced >= 0) {
    void* stream = nullptr;
#if NANODIST_WITH_CUDA
    const TraceSlot& t = state().trace[traced];
    if (t.on_gpu) stream = compute_stream(t.device);
#endif
    end_span(traced, stream);
  }
  if (slot_ < 0) return;
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

void set_table(bool on) { state().table = on; }

}  // namespace nd::op_timer
