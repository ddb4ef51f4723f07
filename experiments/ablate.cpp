// The ablation driver: plan every (variant, seed) run, train through the queue, report.
#include "experiments/ablate.h"

#include "cli/train_flags.h"

#include <ostream>
#include <set>
#include <sstream>

#include "experiments/ablation_report.h"
#include "experiments/unigram_baseline.h"
#include "tensor/error.h"

namespace nd::experiments {
namespace {

constexpr const char* kBuiltinVariants = R"(
[no-warmup]
warmup-iters = 0
[short-warmup]
warmup-iters = x0.1
[no-clip]
grad-clip = 0
[no-layernorm]
no-layernorm = true
[no-residual]
no-residual = true
[no-layernorm-no-residual]
no-layernorm = true
no-residual = true
[lr-x10]
lr = x10
min-lr = x10
[lr-x100]
lr = x100
min-lr = x100
)";

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    size_t b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
  }
  return out;
}

}  // namespace

const ExperimentSpec& builtin_ablation_variants() {
  static const ExperimentSpec spec =
      parse_experiment(kBuiltinVariants, "built-in variants", cli::train_flag_set(), cli::train_flag_set());
  return spec;
}

std::vector<VariantSpec> select_variants(const std::vector<VariantSpec>& pool, const std::string& list) {
  std::vector<std::string> names = split_list(list);
  if (names.empty()) return pool;
  std::set<std::string> wanted;
  for (const std::string& name : names) {
    if (name == "control") continue;
    bool known = false;
    for (const VariantSpec& v : pool) known = known || v.name == name;
    if (!known) {
      std::string all = "control";
      for (const VariantSpec& v : pool) all += ", " + v.name;
      ND_FAIL_INPUT("unknown variant '" << name << "' in --variants (known: " << all << ")");
    }
    wanted.insert(name);
  }
  std::vector<VariantSpec> out;
  for (const VariantSpec& v : pool)
    if (wanted.count(v.name)) out.push_back(v);
  return out;
}

QueueOutcome run_ablate(const ExperimentArgs& args, dist::Comm& comm, std::ostream* progress,
                         dist::FaultGuard* guard) {
  cli::ParsedFlags base = args.flags;
  if (!base.has("log-interval")) base.values["log-interval"].texts = {"1"};
  if (comm.device().is_cuda()) base.values["device"].texts = {comm.device().str()};
  const int64_t seeds = base.get_int("seeds");
  ND_CHECK_INPUT(seeds >= 1, base.origin("seeds") << " must be >= 1, got " << seeds);
  const std::string out_dir = base.get_string("out");
  const std::vector<VariantSpec>& pool =
      args.spec.variants.empty() ? builtin_ablation_variants().variants : args.spec.variants;
  std::vector<VariantSpec> variants = select_variants(pool, base.get_string("variants"));

  // Every run's config is built and validated before the first one trains.
  std::vector<PlannedRun> runs;
  std::vector<AblationVariant> report_plan;
  for (size_t v = 0; v <= variants.size(); ++v) {
    const VariantSpec* spec = v == 0 ? nullptr : &variants[v - 1];
    AblationVariant entry;
    entry.name = spec ? spec->name : "control";
    entry.settings = spec ? describe_settings(spec->settings) : "";
    const train::TrainConfig config = variant_config(base, spec);
    for (int64_t k = 0; k < seeds; ++k) {
      PlannedRun run;
      run.config = config;
      run.config.debug.seed = config.debug.seed + static_cast<uint64_t>(k);
      const std::string dir = entry.name + "/seed" + std::to_string(k);
      run.config.checkpoint.out_dir = out_dir + "/" + dir;
      run.label = dir;
      train::validate_train_config(run.config, comm.size());
      runs.push_back(run);
      AblationRun planned;
      planned.seed = run.config.debug.seed;
      planned.dir = dir;
      entry.runs.push_back(planned);
    }
    report_plan.push_back(entry);
  }
  if (comm.rank() == 0 && progress)
    *progress << "ablate: control + " << variants.size() << " variant(s) x " << seeds << " seed(s) = " << runs.size()
              << " runs into " << out_dir << std::endl;

  QueueOutcome outcome = run_queue(runs, comm, "ablate", progress, guard);
  if (comm.rank() == 0 && !outcome.stopped_by_signal) {
    AblationReport report =
        build_ablation_report(out_dir, std::move(report_plan), unigram_val_loss(base.get_string("data")));
    write_ablation_report(out_dir, report);
    if (progress) {
      for (const AblationVariant& v : report.variants)
        *progress << "ablate: " << v.name << ": " << verdict_name(v.judgement.verdict) << " (" << v.judgement.why
                  << ")\n";
      *progress << "ablate: " << outcome.trained << " run(s) trained, " << outcome.skipped
                << " skipped as finished; wrote " << out_dir << "/report.md and report.json" << std::endl;
    }
  }
  return outcome;
}

}  // namespace nd::experiments
