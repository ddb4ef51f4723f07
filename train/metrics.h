// What a run reports: the one-line step summary of CLI.md for stdout, and the JSON lines of
// OUT/metrics.jsonl (steps, evals, the final summary). Formatting only; the trainer prints.
#pragma once
#include <cstdint>
#include <fstream>
#include <string>

namespace nd::train {

struct StepMetrics {
  int step = 0;
  int max_iters = 0;
  double loss = 0;
  double lr = 0;
  double grad_norm = 0;
  double ms = 0;         // wall time of the step
  double tok_per_s = 0;  // over all ranks
  double flops_per_s = 0;
  double mfu = -1;       // fraction of the device's peak; < 0 when the peak is unknown (CPU)
  double eta_s = -1;     // seconds of training left at the recent pace; < 0 = unknown (not shown)
  double loss_scale = -1;     // the step's loss scale; < 0 = no loss scaling (not shown)
  int64_t skipped_steps = 0;  // steps the loss scaler skipped so far (shown with loss_scale)
};

// `step  250/5000 | loss 1.8123 | lr 9.80e-04 | norm 0.4312 | 41.2 ms | 398k tok/s | ETA 3h05m | MFU 23.4%`
// (no ETA when unknown; GFLOP/s in place of MFU when the peak is unknown).
std::string format_step_line(const StepMetrics& m);
// Time left for humans: 42 -> "42s", 754 -> "12m34s", 11100 -> "3h05m" (rounded to the second).
std::string format_duration(double seconds);
// 398 -> "398", 398000 -> "398k", 3.98e6 -> "3.98M"
std::string format_rate(double per_second);
// A loss for humans: 1.81234 -> "1.8123"; "-" when there is none yet (+inf before the first eval) or
// it is not a number.
std::string format_loss(double loss);

std::string step_json(const StepMetrics& m);
// elapsed_s: wall seconds since the run started (time-to-quality comparisons).
std::string eval_json(int step, double val_loss, double train_loss, double elapsed_s);
std::string final_json(double best_val_loss, int64_t params, int64_t tokens);
// A JSON number; NaN and infinities become null (JSON has no literal for them).
std::string json_number(double value);

// Appends lines to OUT/metrics.jsonl, flushing each so a crash loses nothing already logged.
class MetricsWriter {
 public:
  MetricsWriter() = default;
  void open(const std::string& path, bool append);  // nd::Error when the file cannot be written
  bool is_open() const { return out_.is_open(); }
  void write_line(const std::string& json);

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace nd::train
