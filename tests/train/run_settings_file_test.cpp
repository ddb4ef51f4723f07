// OUT/run.conf as a run folder's one record of its settings (train/run/run_settings_file.h): what
// it holds reads back through --config as the same config; changed_run_settings names the ranks
// and the flags that differ, in flag order, compares values as the flags read them (two spellings
// of one value are no change) and as the run resolves them, skips the keys it is told to, and
// still reads the settings.conf of an older ablate or sweep (ranks as a key line, only the flags
// that change a result, as asked for).
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "cli/train_flags.h"
#include "train/config.h"
#include "train/run/run_settings_file.h"
#include "train_fixture.h"

namespace nd::train {
namespace {

using testing::TempDir;

std::string text_of(const TrainConfig& config, const std::string& name) {
  for (const ConfigField& f : train_config_fields(config))
    if (f.name == name) return f.text;
  return "(no such flag)";
}

TEST(RunSettingsFile, RepeatsTheRunThroughConfig) {
  TempDir dir;
  TrainConfig c = testing::tiny_config(dir / "data", dir.path());
  c.precision.grad_dtype = DType::F32;
  c.parallel.collectives = dist::Algorithm::Ring;
  c.model.recompute = nn::Recompute::Attention;
  c.checkpoint.resume = true;  // how the run was launched: not recorded
  write_run_settings_file(c, 3);
  const std::string path = run_settings_path(dir.path());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("# ranks = 3\n"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("\ncollectives = ring\n"), std::string::npos) << text.str();
  EXPECT_EQ(text.str().find("resume"), std::string::npos) << text.str();

  const std::string conf = "--config=" + path;
  std::vector<const char*> argv = {"train", conf.c_str()};
  const TrainConfig again = cli::parse_train_args(static_cast<int>(argv.size()), argv.data());
  for (const ConfigField& f : train_config_fields(c))
    if (f.name != "resume") EXPECT_EQ(text_of(again, f.name), f.text) << f.name;
  EXPECT_FALSE(again.checkpoint.resume);
}

TEST(RunSettingsFile, NamesWhatChangedAsTheFlagsReadIt) {
  TempDir dir;
  TrainConfig c = testing::tiny_config(dir / "data", dir.path());
  EXPECT_FALSE(changed_run_settings(c, 1).has_value()) << "no record yet";
  write_run_settings_file(c, 1);
  ASSERT_TRUE(changed_run_settings(c, 1).has_value());
  EXPECT_TRUE(changed_run_settings(c, 1)->empty());

  TrainConfig other = c;
  other.optim.lr = 2e-3;
  other.parallel.zero = 1;
  other.checkpoint.overwrite = true;  // never compared
  const std::vector<SettingChange> changed = *changed_run_settings(other, 2);
  ASSERT_EQ(changed.size(), 3u);
  EXPECT_EQ(changed[0].key, "ranks");
  EXPECT_EQ(*changed[0].recorded, "1");
  EXPECT_EQ(changed[0].now, "2");
  EXPECT_EQ(changed[1].key, "lr");
  EXPECT_EQ(*changed[1].recorded, "0.001");
  EXPECT_EQ(changed[1].now, "0.002");
  EXPECT_EQ(changed[2].key, "zero");
  EXPECT_TRUE(changed_run_settings(other, 1, {"ranks", "lr", "zero"})->empty());

  // The run records its resolved settings: --lr-decay-iters -1 is the --max-iters it means.
  TrainConfig asked = c;
  asked.schedule.lr_decay_iters = -1;
  TrainConfig resolved = asked;
  resolve_train_config(resolved);
  write_run_settings_file(resolved, 1);
  EXPECT_TRUE(changed_run_settings(asked, 1)->empty());

  // Another spelling of the same value is no change; a key the file lacks is one.
  {
    std::ofstream out(run_settings_path(dir.path()));
    for (const ConfigField& f : train_config_fields(c)) {
      if (f.name == "resume" || f.name == "overwrite" || f.name == "seed") continue;
      std::string value = f.text;
      if (f.name == "lr") value = "1e-3";
      if (f.name == "fp8-layers") value = "head,attn,mlp";
      out << f.name << " = " << value << "\n";
    }
  }
  const std::vector<SettingChange> spelled = *changed_run_settings(c, 1);
  ASSERT_EQ(spelled.size(), 2u);
  EXPECT_EQ(spelled[0].key, "ranks");  // this file records no ranks
  EXPECT_EQ(spelled[1].key, "seed");
  EXPECT_FALSE(spelled[1].recorded.has_value());
  EXPECT_EQ(spelled[1].now, "1337");
}

TEST(RunSettingsFile, ReadsTheSettingsConfOfOlderExperiments) {
  TempDir dir;
  TrainConfig c = testing::tiny_config("/abs/data", dir.path());
  c.schedule.lr_decay_iters = -1;  // recorded as asked for, not resolved
  const std::set<std::string> not_recorded = {"out", "log-interval", "ckpt-interval", "keep", "comm-timeout",
                                              "heartbeat-timeout", "cuda-graph", "bucket-mb", "layer-stats"};
  {
    std::ofstream out(dir / "settings.conf");
    out << "# The settings this run was started with\nranks = 2\n";
    for (const ConfigField& f : train_config_fields(c))
      if (!not_recorded.count(f.name) && f.name != "resume" && f.name != "overwrite")
        out << f.name << " = " << (f.name == "dtype" ? "f32" : f.text) << "\n";
  }
  // run.conf beside it (train wrote it with the data as given) is not the record.
  TrainConfig relative = c;
  relative.data.dir = "data";
  write_run_settings_file(relative, 2);
  EXPECT_TRUE(changed_run_settings(c, 2, not_recorded)->empty());
  const std::vector<SettingChange> changed = *changed_run_settings(c, 1, not_recorded);
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].key, "ranks");
  EXPECT_EQ(*changed[0].recorded, "2");
}

}  // namespace
}  // namespace nd::train
