// Flag tables of the experiment subcommands and the layering of settings over them.
#include "experiments/experiment_args.h"

#include "cli/train_flags.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <sstream>

#include "tensor/error.h"

namespace nd::experiments {
namespace {

using cli::FlagSet;
using cli::flag;
using cli::FlagSpec;
using train::FlagType;
using cli::ParsedFlags;

// Every train flag (the base every run starts from) under the experiment's own usage line.
FlagSet with_train_flags(const char* command, const char* usage) {
  FlagSet set(command, usage);
  set.allow_config_file();
  const FlagSet train_flags = cli::train_flag_set();
  for (const FlagSpec& s : train_flags.specs()) set.add(s);
  return set;
}

// The shortest text that reads back as exactly `v`.
std::string exact_text(double v) {
  for (int precision = 6;; ++precision) {
    std::ostringstream out;
    out.precision(precision);
    out << v;
    // strtod, not std::stod: a subnormal product (1e-300 x 1e-20) reads back without throwing.
    if (precision >= 17 || std::strtod(out.str().c_str(), nullptr) == v) return out.str();
  }
}

FlagType train_flag_type(const std::string& key) {
  const FlagSet train_flags = cli::train_flag_set();
  for (const FlagSpec& s : train_flags.specs())
    if (s.name == key) return s.type;
  ND_FAIL("no train flag --" << key);
}

}  // namespace

FlagSet ablate_flag_set() {
  FlagSet set = with_train_flags(
      "ablate",
      "--data DIR --out DIR [--experiment FILE] [--variants a,b,...] [--seeds 3] [train flags]\n"
      "Runs the control and each variant over --seeds seeds into OUT/<variant>/seed<k>/, skipping finished runs, "
      "and writes OUT/report.md and OUT/report.json. Each run records its settings (RUN/run.conf); a rerun "
      "whose settings for a started run differ stops with an error naming the folder and key.");
  set.group("ablate")
      .add(flag("experiment", "", "experiment file: base settings, then [variant] sections of overrides"))
      .add(flag("variants", "",
                "variants to run beside the control (default: all of the experiment file's, else the built-in "
                "no-warmup,short-warmup,no-clip,no-layernorm,no-residual,no-layernorm-no-residual,lr-x10,lr-x100)",
                FlagType::String))
      .add(flag("seeds", "3", "seeds per variant: --seed, --seed+1, ... (same data order and init across variants)",
                FlagType::Int));
  return set;
}

FlagSet sweep_flag_set() {
  FlagSet set = with_train_flags(
      "sweep",
      "--data DIR --out DIR (--experiment FILE | --ladder 2x64,4x128,...) [--tokens-per-param R | --max-iters N] "
      "[train flags]\n"
      "Trains each model size into OUT/<size>/, skipping finished runs, fits L(N) = a N^-alpha and "
      "L(N) = E + a N^-alpha over non-embedding parameters, and writes OUT/sweep.csv, fit.json and report.md. "
      "A rerun whose settings for a started size differ from its RUN/run.conf stops with an error.");
  set.group("sweep")
      .add(flag("experiment", "", "experiment file: base settings, then one [size] section per model"))
      .add(flag("ladder", "", "model sizes as LAYERSxWIDTH, comma-separated (instead of the file's sections)",
                FlagType::String))
      .add(flag("head-dim", "64", "width of an attention head for --ladder sizes (heads = width / head-dim)",
                FlagType::Int))
      .add(flag("tokens-per-param", "0",
                "training tokens per non-embedding parameter; sets each model's --max-iters and --lr-decay-iters "
                "(0 = use --max-iters)",
                FlagType::Float))
      .add(flag("lr-base-width", "0",
                "scale each size's --lr and --min-lr by this width / the size's width (AdamW lr ~ 1/width, as in "
                "muP), so --lr is the rate of a model this wide; a size that sets lr or min-lr itself keeps it "
                "(0 = one lr for every size)",
                FlagType::Int))
      .add(flag("seeds", "1",
                "seeds per size: --seed, --seed+1, ... into OUT/<size>/seed<k>/ (1 = OUT/<size>/); each point is the "
                "mean final val loss over them",
                FlagType::Int))
      .add(flag("bootstrap", "1000", "bootstrap resamples for the interval of alpha", FlagType::Int))
      .add(flag("huber-delta", "0.001", "Huber loss threshold on log-loss residuals of the fit", FlagType::Float));
  return set;
}

ExperimentArgs experiment_args_from(const FlagSet& set, const ParsedFlags& flags) {
  ExperimentArgs args;
  args.flags = flags;
  if (args.flags.has("experiment")) {
    args.spec = read_experiment_file(args.flags.get_string("experiment"), set, cli::train_flag_set());
    for (const Setting& s : args.spec.base) {
      if (args.flags.values[s.key].origin == "command line") continue;  // the command line wins
      args.flags.values[s.key] = cli::FlagValue{{s.value}, s.where};
      args.flags.given[s.key] = true;
    }
  }
  ND_CHECK_INPUT(!args.flags.has("resume"), "an experiment resumes by itself: finished runs are skipped and unfinished "
                                      << "ones continue; drop " << args.flags.origin("resume"));
  ND_CHECK_INPUT(args.flags.has("data"), "--data DIR is required (a directory made by nanodist prepare)");
  ND_CHECK_INPUT(args.flags.has("out"), "--out DIR is required (the experiment's directory)");
  return args;
}

ExperimentArgs parse_experiment_args(const FlagSet& set, int argc, const char* const* argv) {
  ParsedFlags flags = set.parse(argc, argv);
  if (flags.help_requested) {
    ExperimentArgs args;
    args.flags = flags;
    args.help_requested = true;
    return args;
  }
  return experiment_args_from(set, flags);
}

ParsedFlags with_settings(ParsedFlags flags, const std::vector<Setting>& settings) {
  for (const Setting& s : settings) {
    std::string text = s.value;
    double factor = 0;
    if (parse_multiplier(s.value, &factor)) {
      const double base = train::parse_double_value(flags.get_string(s.key), flags.origin(s.key));
      const double scaled = base * factor;
      if (train_flag_type(s.key) == FlagType::Int) {
        ND_CHECK_INPUT(std::fabs(scaled) < 2e9, "'" << s.key << "' at " << s.where << " scales " << base << " to "
                                              << scaled << ", out of range");
        text = std::to_string(std::llround(scaled));
      } else {
        ND_CHECK_INPUT(std::isfinite(scaled), "'" << s.key << "' at " << s.where << " scales " << base << " to "
                                                  << scaled << ", out of range");
        text = exact_text(scaled);
      }
    }
    flags.values[s.key] = cli::FlagValue{{text}, s.where};
    flags.given[s.key] = true;
  }
  return flags;
}

train::TrainConfig variant_config(const ParsedFlags& base, const VariantSpec* variant) {
  if (variant == nullptr) return cli::train_config_from_flags(base);
  return cli::train_config_from_flags(with_settings(base, variant->settings));
}

std::string describe_settings(const std::vector<Setting>& settings) {
  std::string out;
  for (const Setting& s : settings) out += (out.empty() ? "" : ", ") + s.key + " = " + s.value;
  return out;
}

}  // namespace nd::experiments
