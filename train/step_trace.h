// The timeline of chosen steps (--trace FILE --trace-steps a:b): from the start of step a to the
// end of step b every op (compute track) and every collective (one track per communicator) is
// timed (tensor/op_trace.h, dist/comm/tracing_comm.h); each step is a span enclosing its ops. Then every
// rank writes its part, rank 0 merges them into FILE as Chrome trace JSON (process = rank, thread
// = track), which Perfetto and chrome://tracing open, and each rank's compute, communication,
// exposed communication (communicating while no op runs) and idle time are summed over the ranks
// for the run's summary lines.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "dist/comm/comm.h"
#include "tensor/op_trace.h"

namespace nd::train {

// "a:b" (1 <= a <= b) -> {a, b}; nd::Error (input) naming --trace-steps otherwise.
std::pair<int64_t, int64_t> parse_trace_steps(const std::string& text);

// One rank's time over the traced window, in milliseconds.
struct TraceSummary {
  double window_ms = 0, compute_ms = 0, comm_ms = 0, exposed_comm_ms = 0, idle_ms = 0;
};
// From one rank's events: compute = the union of the compute track's op spans (steps excluded),
// communication = the union of every other track's, exposed = communication outside compute,
// idle = the window (first start to last end) outside both.
TraceSummary summarize_trace(const std::vector<op_timer::TraceEvent>& events);

// The Chrome trace events of one rank (process `rank`, a thread per track, named), as JSON
// objects separated by commas.
std::string chrome_trace_events(const std::vector<op_timer::TraceEvent>& events, int rank);

class StepTrace {
 public:
  // `device`: the model's CUDA device index, or -1 on the CPU.
  StepTrace(std::string path, int64_t first, int64_t last, dist::Comm& world, int device);
  ~StepTrace();

  // Around step `step` (1-based): begins the trace at the first step and a span for each step.
  void before_step(int64_t step);
  // Ends the step's span; after the last step writes FILE (collective over the world) and returns
  // the summary lines (one per rank, for rank 0 to print); otherwise none.
  std::vector<std::string> after_step(int64_t step);

 private:
  std::string path_;
  int64_t first_, last_;
  dist::Comm& world_;
  int device_;
  op_timer::Span* step_span_ = nullptr;
};

}  // namespace nd::train
