// A finished or interrupted run as its OUT/metrics.jsonl tells it (train/metrics.cpp writes the
// records): step records, eval records and the final record. A resumed run appends after its
// checkpoint's step, so records of an interrupted attempt past that step are dropped: the later
// attempt's record of a step replaces the earlier one.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace nd::experiments {

struct StepRecord {
  int64_t step = 0;
  double loss = 0;       // NaN where the file says null (a non-finite loss)
  double lr = 0;
  double grad_norm = 0;  // NaN where null
  double tok_per_s = 0;  // NaN where absent
  double mfu = 0;        // NaN where null (the device's peak is unknown, e.g. the CPU)
};

struct EvalRecord {
  int64_t step = 0;
  double val_loss = 0;
  double train_loss = 0;
};

// One block's line of a --layer-stats record (train/layer_stats.h); NaN where null.
struct BlockStatsRecord {
  double grad_norm = 0, resid_rms = 0, attn_rms = 0, mlp_rms = 0;
};
struct LayerStatsRecord {
  int64_t step = 0;
  std::vector<BlockStatsRecord> blocks;  // by layer
};

struct RunMetrics {
  std::vector<StepRecord> steps;  // ascending steps
  std::vector<EvalRecord> evals;  // ascending steps
  std::vector<LayerStatsRecord> layer_stats;  // ascending steps (--layer-stats)
  bool finished = false;          // the last record is the final record
  double best_val_loss = 0;       // from the final record; NaN when it says null
  int64_t params = 0;
  int64_t tokens = 0;
};

// An absent file reads as an empty, unfinished run; a truncated last line (a crash mid-write)
// is ignored; any other malformed line is an nd::Error naming FILE:LINE.
RunMetrics read_run_metrics(const std::string& path);

// One flat JSON object of numbers, null, true/false and strings, as the trainer writes them;
// false on anything else. null reads as NaN, true as 1, strings are skipped.
bool parse_flat_json(const std::string& line, std::vector<std::pair<std::string, double>>* fields);

}  // namespace nd::experiments
