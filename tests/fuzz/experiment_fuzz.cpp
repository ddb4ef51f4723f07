// Fuzz target: an experiment file (a base of key = value lines, then [variant] sections of
// overrides, `x10` scaling the base value), read as `nanodist ablate --experiment FILE` reads it,
// and every variant's run config built and checked as the ablation does before training.
#include "experiments/experiment_args.h"
#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = nd::fuzz::write_file("experiment.conf", std::string(reinterpret_cast<const char*>(data), size));
  nd::fuzz::expect_input_errors_only([&] {
    static const nd::cli::FlagSet flags = nd::experiments::ablate_flag_set();
    // On the CPU (the command line wins over the file's base), so checks past the device are reached.
    const char* argv[] = {"ablate", "--data", "data", "--out", "out", "--device", "cpu", "--experiment", path.c_str()};
    const nd::experiments::ExperimentArgs args = nd::experiments::parse_experiment_args(flags, 9, argv);
    std::vector<const nd::experiments::VariantSpec*> runs = {nullptr};  // the control
    for (const nd::experiments::VariantSpec& v : args.spec.variants) runs.push_back(&v);
    for (const nd::experiments::VariantSpec* v : runs) {
      nd::train::TrainConfig config = nd::experiments::variant_config(args.flags, v);
      nd::train::resolve_train_config(config);
      nd::train::validate_train_config(config, 1);
    }
  });
  return 0;
}
