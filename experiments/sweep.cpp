// The sweep driver: sizes and budgets into planned runs, the queue, then points, fits, files.
#include "experiments/sweep.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <sstream>

#include "experiments/run_metrics.h"
#include "experiments/sweep_analysis.h"
#include "experiments/sweep_report.h"
#include "tensor/error.h"
#include "train/model_config.h"
#include "train/run/run_files.h"

namespace nd::experiments {
namespace {

struct PlannedSize {
  std::vector<PlannedRun> runs;  // one per seed
  SweepPoint point;              // name, shape, N and lr filled in
  int64_t tokens_per_step = 0;
};

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

// Sample standard deviation; 0 for one value.
double spread_of(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean_of(v);
  double sq = 0;
  for (double x : v) sq += (x - m) * (x - m);
  return std::sqrt(sq / static_cast<double>(v.size() - 1));
}

bool sets(const VariantSpec& v, const std::string& key) {
  for (const Setting& s : v.settings)
    if (s.key == key) return true;
  return false;
}

// "4x128" -> 4, 128; false unless the whole text is two positive integers around an 'x'.
bool parse_size(const std::string& text, int* layers, int* width) {
  const size_t x = text.find('x');
  if (x == std::string::npos || x == 0 || x + 1 == text.size()) return false;
  char* end = nullptr;
  const long l = std::strtol(text.c_str(), &end, 10);
  if (end != text.c_str() + x) return false;
  const long w = std::strtol(text.c_str() + x + 1, &end, 10);
  if (end != text.c_str() + text.size() || l < 1 || w < 1 || l > 100000 || w > 1000000) return false;
  *layers = static_cast<int>(l);
  *width = static_cast<int>(w);
  return true;
}

}  // namespace

std::vector<VariantSpec> ladder_variants(const std::string& ladder, int head_dim) {
  ND_CHECK_INPUT(head_dim >= 1, "--head-dim must be >= 1, got " << head_dim);
  std::vector<VariantSpec> out;
  std::stringstream in(ladder);
  for (std::string item; std::getline(in, item, ',');) {
    int layers = 0, width = 0;
    ND_CHECK_INPUT(parse_size(item, &layers, &width), "bad size '" << item << "' in --ladder: expected LAYERSxWIDTH, e.g. 4x128");
    ND_CHECK_INPUT(width % head_dim == 0, "size '" << item << "' in --ladder: width " << width << " is not a multiple of "
                                             << "--head-dim " << head_dim);
    for (const VariantSpec& v : out) ND_CHECK_INPUT(v.name != item, "size '" << item << "' twice in --ladder");
    const std::string where = "--ladder " + item;
    out.push_back(VariantSpec{item,
                              where,
                              {Setting{"n-layer", std::to_string(layers), where},
                               Setting{"n-embd", std::to_string(width), where},
                               Setting{"n-head", std::to_string(width / head_dim), where}}});
  }
  ND_CHECK_INPUT(!out.empty(), "--ladder lists no sizes");
  return out;
}

int64_t non_embedding_params(const nn::GPTConfig& model) {
  Generator gen(0);
  nn::GPT gpt(model, gen, Device::cpu(), DType::F32);
  int64_t n = 0;
  const nn::NamedParameters params = gpt.named_parameters();
  const nn::NamedParamInfos infos = gpt.named_param_infos();
  for (size_t i = 0; i < params.size(); ++i)
    if (!infos[i].second.embedding) n += params[i].second.data().numel();
  return n;
}

int64_t steps_for_budget(int64_t n, double tokens_per_param, int64_t tokens_per_step) {
  ND_CHECK(tokens_per_step >= 1, "tokens per step must be >= 1, got " << tokens_per_step);
  const double steps = std::ceil(tokens_per_param * static_cast<double>(n) / static_cast<double>(tokens_per_step));
  ND_CHECK(steps < 2e9, "a budget of " << tokens_per_param << " tokens/param for " << n << " parameters needs "
                                       << steps << " steps, too many");
  return std::max<int64_t>(1, static_cast<int64_t>(steps));
}

QueueOutcome run_sweep(const ExperimentArgs& args, dist::Comm& comm, std::ostream* progress,
                        dist::FaultGuard* guard) {
  cli::ParsedFlags base = args.flags;
  if (comm.device().is_cuda()) base.values["device"].texts = {comm.device().str()};
  const std::string out_dir = base.get_string("out");
  const double tokens_per_param = base.get_double("tokens-per-param");
  ND_CHECK(tokens_per_param >= 0, base.origin("tokens-per-param") << " must be >= 0 (0 = use --max-iters)");
  ND_CHECK(tokens_per_param == 0 || !base.has("max-iters"),
           "give --tokens-per-param or --max-iters, not both (" << base.origin("max-iters") << ")");
  const int64_t resamples = base.get_int("bootstrap");
  ND_CHECK(resamples >= 0 && resamples <= 1000000, base.origin("bootstrap") << " must be in [0, 1e6]");
  const double huber_delta = base.get_double("huber-delta");
  ND_CHECK(huber_delta > 0, base.origin("huber-delta") << " must be > 0");
  const int64_t lr_base_width = base.get_int("lr-base-width");
  ND_CHECK(lr_base_width >= 0, base.origin("lr-base-width") << " must be >= 0 (0 = one lr for every size)");
  const int64_t seeds = base.get_int("seeds");
  ND_CHECK(seeds >= 1 && seeds <= 1000, base.origin("seeds") << " must be in [1, 1000]");

  std::vector<VariantSpec> sizes;
  if (base.has("ladder")) {
    ND_CHECK(args.spec.variants.empty(), "--ladder and the sections of " << args.spec.source
                                                                         << " both list sizes; give one");
    sizes = ladder_variants(base.get_string("ladder"), static_cast<int>(base.get_int("head-dim")));
  } else {
    sizes = args.spec.variants;
  }
  ND_CHECK(!sizes.empty(), "no model sizes: give --ladder 2x64,4x128,... or an --experiment file with one [size] "
                           "section per model");

  const int64_t vocab = train::open_run_data(base.get_string("data")).vocab_size;
  std::vector<PlannedSize> plan;
  for (const VariantSpec& v : sizes) {
    PlannedSize s;
    train::TrainConfig c = variant_config(base, &v);
    c.checkpoint.out_dir = out_dir + "/" + v.name;
    train::validate_train_config(c, comm.size());
    s.point.name = v.name;
    s.point.n_layer = c.model.n_layer;
    s.point.n_head = c.model.n_head;
    s.point.n_embd = c.model.n_embd;
    s.point.non_embedding_params = non_embedding_params(train::model_config_for(c, vocab));
    s.tokens_per_step = static_cast<int64_t>(c.data.batch_size) * c.model.block_size * c.data.grad_accum *
                        c.parallel.dp_size(comm.size());
    if (lr_base_width > 0) {
      const double scale = static_cast<double>(lr_base_width) / c.model.n_embd;
      if (!sets(v, "lr")) c.optim.lr *= scale;
      if (!sets(v, "min-lr")) c.optim.min_lr *= scale;
    }
    s.point.lr = c.optim.lr;
    if (tokens_per_param > 0 && !sets(v, "max-iters"))
      c.schedule.max_iters = static_cast<int>(steps_for_budget(s.point.non_embedding_params, tokens_per_param,
                                                      s.tokens_per_step));
    // Each model's cosine decay ends at its own last step unless the decay is set explicitly.
    if (!base.has("lr-decay-iters") && !sets(v, "lr-decay-iters")) c.schedule.lr_decay_iters = c.schedule.max_iters;
    // One seed trains into OUT/<size>/, several into OUT/<size>/seed<k>/ with --seed + k.
    for (int64_t k = 0; k < seeds; ++k) {
      PlannedRun run{v.name, c};
      if (seeds > 1) {
        run.label = v.name + "/seed" + std::to_string(k);
        run.config.debug.seed = c.debug.seed + static_cast<uint64_t>(k);
      }
      run.config.checkpoint.out_dir = out_dir + "/" + run.label;
      s.runs.push_back(run);
    }
    plan.push_back(s);
  }
  std::vector<PlannedRun> runs;
  for (const PlannedSize& s : plan) runs.insert(runs.end(), s.runs.begin(), s.runs.end());
  if (comm.rank() == 0 && progress) {
    *progress << "sweep: " << plan.size() << " model size(s) x " << seeds << " seed(s) into " << out_dir << "\n";
    for (const PlannedSize& s : plan)
      *progress << "  " << s.point.name << ": " << s.point.n_layer << " layers x " << s.point.n_embd << " wide, "
                << s.point.non_embedding_params << " non-embedding params, " << s.runs[0].config.schedule.max_iters
                << " steps x " << s.tokens_per_step << " tokens, lr " << s.point.lr << "\n";
    progress->flush();
  }

  QueueOutcome outcome = run_queue(runs, comm, "sweep", progress, guard);
  if (comm.rank() != 0 || outcome.stopped_by_signal) return outcome;
  std::vector<SweepPoint> points;
  for (const PlannedSize& s : plan) {
    SweepPoint p = s.point;
    std::vector<double> finals, bests;
    for (const PlannedRun& run : s.runs) {
      RunMetrics m = read_run_metrics(run.config.checkpoint.out_dir + "/metrics.jsonl");
      p.params = m.params;
      p.tokens = m.tokens;
      finals.push_back(m.evals.empty() ? std::nan("") : m.evals.back().val_loss);
      bests.push_back(m.best_val_loss);
    }
    p.steps = p.tokens / s.tokens_per_step;
    p.tokens_per_param = static_cast<double>(p.tokens) / static_cast<double>(p.non_embedding_params);
    p.seeds = static_cast<int>(finals.size());
    p.final_val_loss = mean_of(finals);  // NaN when any seed diverged before an eval
    p.final_val_loss_spread = spread_of(finals);
    p.best_val_loss = mean_of(bests);
    points.push_back(p);
  }
  flag_law_breaks(points);
  SweepFit fit = fit_sweep(points, huber_delta, static_cast<int>(resamples));
  write_sweep_report(out_dir, points, fit);
  if (progress) {
    char line[300];
    std::snprintf(line, sizeof(line), "sweep: L = %.4g N^-%.4f (alpha %.4f..%.4f), L = %.4g + %.4g N^-%.4f; "
                  "largest fit error %.2f%% / %.2f%%",
                  fit.pure.a, fit.pure.alpha, fit.pure_alpha.lo, fit.pure_alpha.hi, fit.offset.E, fit.offset.a,
                  fit.offset.alpha, fit.pure_max_error_pct, fit.offset_max_error_pct);
    *progress << line << "\n";
    for (const SweepPoint& p : points)
      if (p.breaks_law) *progress << "sweep: " << p.name << " breaks the law: " << p.why << "\n";
    *progress << "sweep: " << outcome.trained << " run(s) trained, " << outcome.skipped
              << " skipped as finished; wrote " << out_dir << "/sweep.csv, fit.json and report.md" << std::endl;
  }
  return outcome;
}

}  // namespace nd::experiments
