// The timeline (--trace): while recording, every op_timer region (the ops' forward and backward
// kernels, tensor/op_timer.h) is also kept with its start and end on the "compute" track, and
// spans on other tracks (a communicator's stream, dist/comm/tracing_comm.h) are timed the same way:
// CUDA events on the stream that runs the work, the wall clock for host work. Times are
// microseconds from start_trace(). One mechanism with the op timer: the same events, kept apart.
#pragma once
#include <string>
#include <vector>

namespace nd::op_timer {

// From now on op_timer::enabled() is true and regions are recorded; the time origin is now (an
// event on `device`'s compute stream, -1 = the CPU).
void start_trace(int device);
// Stops recording (what was recorded stays until take_trace()).
void stop_trace();
bool tracing();

struct TraceEvent {
  std::string name;
  std::string track;  // "compute", or a communicator's track name
  double start_us = 0, end_us = 0;
};
// Waits for the recorded events and returns them (and forgets them), in recording order.
std::vector<TraceEvent> take_trace();

// A span of work queued on `cuda_stream` (a cudaStream_t of `device`) from construction to
// destruction, on `track`; with cuda_stream nullptr, host work timed by the wall clock. Nothing
// while not tracing.
class Span {
 public:
  Span(const std::string& name, const std::string& track, void* cuda_stream, int device);
  ~Span();
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  int slot_ = -1;
  void* stream_ = nullptr;
};

}  // namespace nd::op_timer
