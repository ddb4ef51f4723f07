// The observability features on a GPU run (bf16, the CUDA graph on): --trace's timeline from CUDA
// events is valid nested Chrome JSON with the traced steps and their ops; --layer-stats in bf16
// writes finite statistics while the steps between statistics steps still replay the graph.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "data/json_value.h"
#include "tensor/device.h"
#include "train/trace_checks.h"
#include "train/train_fixture.h"
#include "train/trainer.h"

namespace nd::train {
namespace {

TrainConfig gpu_config(const testing::TempDir& dir) {
  testing::write_tiny_data(dir / "data");
  TrainConfig c = testing::tiny_config(dir / "data", dir / "out");
  c.parallel.device = Device::cuda();
  c.precision.dtype = DType::BF16;
  c.schedule.max_iters = 12;
  return c;
}

TEST(ObservabilityCuda, TraceFromCudaEventsIsNestedJson) {
  if (!cuda_available()) GTEST_SKIP() << "no GPU";
  testing::TempDir dir;
  TrainConfig c = gpu_config(dir);
  c.observe.trace = dir / "trace.json";
  c.observe.trace_steps = "4:5";
  std::ostringstream log;
  RunContext context;
  context.log = &log;
  run_training(c, context);
  auto events = testing::read_chrome_trace(dir / "trace.json");
  testing::expect_nested_per_track(events);
  int steps = 0, ops = 0;
  for (const auto& e : events) {
    steps += e.cat == "step";
    ops += e.cat == "op";
    EXPECT_GE(e.dur, 0.0) << e.name;
  }
  EXPECT_EQ(steps, 2);
  EXPECT_GT(ops, 20);
  EXPECT_NE(log.str().find("trace: rank 0: compute "), std::string::npos) << log.str();
}

TEST(ObservabilityCuda, LayerStatsInBf16KeepTheGraph) {
  if (!cuda_available()) GTEST_SKIP() << "no GPU";
  testing::TempDir dir;
  TrainConfig c = gpu_config(dir);
  c.observe.layer_stats = 5;
  TrainResult r = run_training(c);
  EXPECT_GT(r.cuda_graph_replays, 0);
  std::ifstream in(dir / "out/metrics.jsonl");
  int lines = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"layer_stats\"") == std::string::npos) continue;
    ++lines;
    JsonValue v = parse_json(line, "metrics.jsonl");
    for (const JsonValue& b : v.find("layer_stats")->find("blocks")->items)
      for (const char* k : {"grad_norm", "resid_rms", "attn_rms", "mlp_rms", "gelu_saturated"})
        EXPECT_TRUE(std::isfinite(b.find(k)->as_double(k)) && b.find(k)->as_double(k) >= 0) << k;
  }
  EXPECT_EQ(lines, 2);
}

}  // namespace
}  // namespace nd::train
