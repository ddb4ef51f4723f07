// Fuzz target: a `--config FILE` of train flags (key = value lines; OUT/run.conf is one), parsed
// and checked as `nanodist train --config FILE` does on one rank, then read back as the run.conf a
// resume compares its settings with.
#include "cli/train_flags.h"
#include "fuzz_target.h"
#include "train/run/run_settings_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = nd::fuzz::write_file("out/run.conf", std::string(reinterpret_cast<const char*>(data), size));
  const std::string out = nd::fuzz::scratch_dir() + "/out";
  nd::fuzz::expect_input_errors_only([&] {
    const char* argv[] = {"train", "--config", path.c_str(), "--data", "data", "--out", out.c_str()};
    nd::train::TrainConfig config = nd::cli::parse_train_args(7, argv);
    nd::train::resolve_train_config(config);
    nd::train::validate_train_config(config, 1);
    nd::train::changed_run_settings(config, 1);
  });
  return 0;
}
