// Where the damage starts: a constructed dead variant whose block 2 gradient norm falls 1000x
// below the control's at step 20 (block 3 a little later in the order, block 0 and 1 never) is
// reported at step 20, layer 2 in report.md and report.json; a diverged run's NaN departs; runs
// without --layer-stats say so.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "experiments/ablation_report.h"
#include "experiments/layer_departure.h"
#include "train/train_fixture.h"

namespace nd::experiments {
namespace {

namespace fs = std::filesystem;

std::string stats_line(int step, const std::vector<double>& grad_norms, double rms) {
  std::ostringstream s;
  s << "{\"step\":" << step << ",\"layer_stats\":{\"tensors\":{},\"blocks\":[";
  for (size_t l = 0; l < grad_norms.size(); ++l)
    s << (l ? "," : "") << "{\"layer\":" << l << ",\"grad_norm\":" << grad_norms[l] << ",\"resid_rms\":" << rms
      << ",\"attn_rms\":" << rms << ",\"mlp_rms\":" << rms << ",\"gelu_saturated\":0,\"attn_entropy\":[1,1]}";
  s << "]}}";
  return s.str();
}

// 40 steps; a statistics line every 10: `grad_norms(step)` per block, RMS 1.
template <typename F>
void write_run(const std::string& dir, double step_grad_norm, double loss_drop, F grad_norms) {
  fs::create_directories(dir);
  std::ofstream out(dir + "/metrics.jsonl");
  for (int s = 1; s <= 40; ++s) {
    if (s % 10 == 0) out << stats_line(s, grad_norms(s), 1.0) << "\n";  // before the step record, as the trainer
    out << "{\"step\":" << s << ",\"loss\":" << 4.0 - loss_drop * s / 40 << ",\"lr\":0.001,\"grad_norm\":"
        << step_grad_norm << ",\"ms\":1,\"tok_per_s\":1000}\n";
  }
  out << "{\"step\":40,\"val_loss\":" << 4.0 - loss_drop << ",\"train_loss\":" << 4.0 - loss_drop
      << ",\"elapsed_s\":1}\n";
  out << "{\"final\":true,\"best_val_loss\":" << 4.0 - loss_drop << ",\"params\":100,\"tokens\":1000}\n";
}

TEST(LayerDeparture, ReportNamesTheFirstFailingLayerOfADeadVariant) {
  train::testing::TempDir dir;
  write_run(dir / "control/seed0", 0.5, 1.5, [](int) { return std::vector<double>{0.1, 0.1, 0.1, 0.1}; });
  write_run(dir / "dead/seed0", 0.0, 0.0, [](int s) {
    if (s < 20) return std::vector<double>{0.1, 0.1, 0.1, 0.1};
    return std::vector<double>{0.1, 0.09, 1e-4, s < 30 ? 0.02 : 1e-5};
  });
  std::vector<AblationVariant> variants(2);
  variants[0].name = "control";
  variants[1].name = "dead";
  variants[1].settings = "no-layernorm = true";
  variants[0].runs = {AblationRun{1337, "control/seed0", {}, {}, {}, {}}};
  variants[1].runs = {AblationRun{1337, "dead/seed0", {}, {}, {}, {}}};
  AblationReport report = build_ablation_report(dir.path(), variants, 3.0);
  ASSERT_EQ(report.variants[1].judgement.verdict, Verdict::Dead) << report.variants[1].judgement.why;
  const LayerDeparture& d = report.variants[1].runs[0].departure;
  ASSERT_TRUE(d.found);
  EXPECT_EQ(d.step, 20);
  EXPECT_EQ(d.layer, 2);
  EXPECT_EQ(d.stat, "grad_norm");

  write_ablation_report(dir.path(), report);
  std::ifstream md_in(dir / "report.md"), js_in(dir / "report.json");
  std::stringstream md, js;
  md << md_in.rdbuf();
  js << js_in.rdbuf();
  EXPECT_NE(md.str().find("## Where the damage starts"), std::string::npos) << md.str();
  EXPECT_NE(md.str().find("dead (dead), seed 1337: step 20, layer 2: grad_norm 0.0001 vs 0.1 (1e+03x lower)"),
            std::string::npos)
      << md.str();
  EXPECT_NE(js.str().find("\"damage_start\":{\"step\":20,\"layer\":2,\"stat\":\"grad_norm\"}"), std::string::npos);
}

TEST(LayerDeparture, NonFiniteDepartsAndMissingStatisticsAreSaid) {
  RunMetrics control, variant, none;
  control.layer_stats = {{10, {{0.1, 1, 1, 1}, {0.1, 1, 1, 1}}}};
  variant.layer_stats = {{10, {{0.1, 1, 1, 1}, {0.1, 5, NAN, 1}}}};
  LayerDeparture d = first_layer_departure(variant, control);
  ASSERT_TRUE(d.found);
  EXPECT_EQ(d.layer, 1);
  EXPECT_EQ(d.stat, "attn_rms");  // resid_rms 5x is within 10x
  EXPECT_NE(describe(first_layer_departure(none, control)).find("--layer-stats"), std::string::npos);
  EXPECT_EQ(describe(first_layer_departure(control, control)), "no layer departs 10x from the control up to step 10");
}

}  // namespace
}  // namespace nd::experiments
