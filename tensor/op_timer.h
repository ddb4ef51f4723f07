// The op timer (`nanodist train --op-times`): times named regions of work, each op's forward and
// backward kernels, on the device that runs them (CUDA events on the compute stream; the wall
// clock on the CPU, whose kernels are synchronous) and adds them up by name, with the FLOPs or
// bytes an op declares. Off (the default) a region costs one test of a flag.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace nd::op_timer {

// True while regions are timed: the table is on (set_table) or a trace records (op_trace.h).
bool enabled();
// Keeps the totals of collect() from now on (true) or stops (false, the default). Process-wide:
// the trainer sets it for a run.
void set_table(bool on);

// What the next region of this thread computes: `detail` names it more precisely than the op
// (e.g. "768->2304" for a linear), flops and bytes give its rate (0 = not known).
struct Cost {
  double flops = 0.0, bytes = 0.0;
  std::string detail;
};
void note_next(Cost cost);

// Times the work queued on `on`'s device while it lives, as `name` (plus the noted detail, or
// else `on`'s shape). Regions on a stream being captured into a CUDA graph are not timed.
class Scope {
 public:
  Scope(const char* name, const Tensor& on) {
    if (enabled()) begin(name, on);
  }
  ~Scope() {
    if (active_) end();
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  void begin(const char* name, const Tensor& on);
  void end();

  bool active_ = false;
  int slot_ = -1;  // the pending region (its events, name and cost)
};

// One line of the table: every region of one name since the last reset.
struct Row {
  std::string name;
  int64_t calls = 0;
  double ms = 0.0;             // summed
  double flops = 0.0, bytes = 0.0;  // summed over the calls that declared them
};

// Waits for the timed regions, adds them to the totals and returns the totals, largest first.
std::vector<Row> collect();
// Forgets the totals and the pending regions (e.g. after warm-up steps).
void reset();
// While paused no region is timed (work that is not part of a training step: evaluations).
void pause(bool paused);

}  // namespace nd::op_timer
