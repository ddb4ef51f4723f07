// sweep.csv, fit.json and report.md from the points and the fit.
#include "experiments/sweep_report.h"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "data/atomic_file.h"
#include "train/metrics.h"

namespace nd::experiments {
namespace {

using train::json_number;

std::string fixed(double v, const char* fmt) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

std::string quoted(const std::string& s, char quote_escape) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += quote_escape;
    if (c == '\\' && quote_escape == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string csv_number(double v) { return std::isfinite(v) ? json_number(v) : ""; }

std::string csv(const std::vector<SweepPoint>& points) {
  std::ostringstream out;
  out << "name,n_layer,n_head,n_embd,params,non_embedding_params,lr,steps,tokens,tokens_per_param,seeds,final_val_loss,"
         "final_val_loss_spread,best_val_loss,in_fit,pure_prediction,pure_error_pct,offset_prediction,offset_error_pct,breaks_law,why\n";
  for (const SweepPoint& p : points)
    out << p.name << "," << p.n_layer << "," << p.n_head << "," << p.n_embd << "," << p.params << ","
        << p.non_embedding_params << "," << csv_number(p.lr) << "," << p.steps << "," << p.tokens << "," << csv_number(p.tokens_per_param) << ","
        << p.seeds << "," << csv_number(p.final_val_loss) << "," << csv_number(p.final_val_loss_spread) << ","
        << csv_number(p.best_val_loss) << "," << (p.in_fit ? 1 : 0) << ","
        << csv_number(p.pure_prediction) << "," << csv_number(p.pure_error_pct) << ","
        << csv_number(p.offset_prediction) << "," << csv_number(p.offset_error_pct) << "," << (p.breaks_law ? 1 : 0)
        << "," << quoted(p.why, '"') << "\n";
  return out.str();
}

std::string law_json(const PowerLawFit& f, const BootstrapInterval& ci, double max_error_pct) {
  std::ostringstream out;
  out << "{\"ok\":" << (f.ok ? "true" : "false") << ",\"a\":" << json_number(f.a) << ",\"alpha\":"
      << json_number(f.alpha);
  if (f.with_offset) out << ",\"E\":" << json_number(f.E);
  out << ",\"alpha_interval\":[" << json_number(ci.lo) << "," << json_number(ci.hi) << "],\"bootstrap_resamples\":"
      << ci.resamples << ",\"huber_objective\":" << json_number(f.objective) << ",\"max_abs_error_pct\":"
      << json_number(max_error_pct) << "}";
  return out.str();
}

std::string json(const std::vector<SweepPoint>& points, const SweepFit& fit) {
  std::ostringstream out;
  out << "{\"x\":\"non_embedding_params\",\"y\":\"final_val_loss\",\"huber_delta\":" << json_number(fit.huber_delta)
      << ",\n\"power_law\":" << law_json(fit.pure, fit.pure_alpha, fit.pure_max_error_pct)
      << ",\n\"power_law_offset\":" << law_json(fit.offset, fit.offset_alpha, fit.offset_max_error_pct)
      << ",\n\"points\":[";
  for (size_t i = 0; i < points.size(); ++i) {
    const SweepPoint& p = points[i];
    out << (i ? "," : "") << "\n{\"name\":" << quoted(p.name, '\\') << ",\"n_layer\":" << p.n_layer
        << ",\"n_embd\":" << p.n_embd << ",\"n_head\":" << p.n_head << ",\"params\":" << p.params
        << ",\"non_embedding_params\":" << p.non_embedding_params << ",\"lr\":" << json_number(p.lr)
        << ",\"steps\":" << p.steps
        << ",\"tokens\":" << p.tokens << ",\"tokens_per_param\":" << json_number(p.tokens_per_param)
        << ",\"seeds\":" << p.seeds << ",\"final_val_loss\":" << json_number(p.final_val_loss)
        << ",\"final_val_loss_spread\":" << json_number(p.final_val_loss_spread) << ",\"best_val_loss\":"
        << json_number(p.best_val_loss) << ",\"in_fit\":" << (p.in_fit ? "true" : "false")
        << ",\"pure_error_pct\":" << json_number(p.pure_error_pct) << ",\"offset_error_pct\":"
        << json_number(p.offset_error_pct) << ",\"breaks_law\":" << (p.breaks_law ? "true" : "false")
        << ",\"why\":" << quoted(p.why, '\\') << "}";
  }
  out << "\n]}\n";
  return out.str();
}

std::string markdown(const std::vector<SweepPoint>& points, const SweepFit& fit) {
  std::ostringstream md;
  md << "# Scaling sweep\n\nN = non-embedding parameters; L = final val loss (the mean over seeds, ± their "
        "standard deviation, when there are several). Fits minimise the Huber loss (delta "
     << fit.huber_delta << ") of log residuals (Hoffmann et al. 2022); alpha intervals are 95% bootstrap "
     << "percentiles.\n\n";
  md << "- L(N) = a N^-alpha: a = " << fixed(fit.pure.a, "%.5g") << ", alpha = " << fixed(fit.pure.alpha, "%.4f")
     << " [" << fixed(fit.pure_alpha.lo, "%.4f") << ", " << fixed(fit.pure_alpha.hi, "%.4f") << "] ("
     << fit.pure_alpha.resamples << " resamples); largest error of a fitted point "
     << fixed(fit.pure_max_error_pct, "%.2f%%") << "\n";
  md << "- L(N) = E + a N^-alpha: E = " << fixed(fit.offset.E, "%.5g") << ", a = " << fixed(fit.offset.a, "%.5g")
     << ", alpha = " << fixed(fit.offset.alpha, "%.4f") << " [" << fixed(fit.offset_alpha.lo, "%.4f") << ", "
     << fixed(fit.offset_alpha.hi, "%.4f") << "] (" << fit.offset_alpha.resamples
     << " resamples); largest error of a fitted point " << fixed(fit.offset_max_error_pct, "%.2f%%") << "\n\n";
  md << "| model | layers x width | N | lr | steps | tokens | tokens/param | final val loss (seeds) | error a N^-alpha | "
        "error E + a N^-alpha | in fit | breaks the law |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const SweepPoint& p : points)
    md << "| " << p.name << " | " << p.n_layer << " x " << p.n_embd << " | " << p.non_embedding_params << " | "
       << fixed(p.lr, "%.3g") << " | " << p.steps << " | " << p.tokens << " | " << fixed(p.tokens_per_param, "%.3g") << " | "
       << fixed(p.final_val_loss, "%.4f")
       << (p.seeds > 1 ? " ± " + fixed(p.final_val_loss_spread, "%.4f") + " (" + std::to_string(p.seeds) + ")" : "")
       << " | " << fixed(p.pure_error_pct, "%+.2f%%") << " | "
       << fixed(p.offset_error_pct, "%+.2f%%") << " | " << (p.in_fit ? "yes" : "no") << " | "
       << (p.breaks_law ? "**yes**: " + p.why : (p.why.empty() ? "no" : p.why)) << " |\n";
  md << "\nA point breaks the law when a model with fewer parameters reaches a lower loss; such points are left out "
        "of the fit and their error is against the law of the others.\n";
  // A fit with as many parameters as points passes through every point: zero error and an
  // interval of zero width say nothing about the law.
  int fitted = 0, one_seed = 0;
  for (const SweepPoint& p : points) {
    fitted += p.in_fit ? 1 : 0;
    one_seed += p.seeds == 1 ? 1 : 0;
  }
  std::vector<std::string> warnings;
  if (fitted <= 2)
    warnings.push_back("L(N) = a N^-alpha has 2 parameters and is fitted to " + std::to_string(fitted) +
                       " point(s): it passes through them, so its error and its alpha interval (zero width) say "
                       "nothing; sweep at least 4 sizes");
  if (fitted <= 3)
    warnings.push_back("L(N) = E + a N^-alpha has 3 parameters and is fitted to " + std::to_string(fitted) +
                       " point(s): it is not determined by them; sweep at least 5 sizes to read E");
  if (one_seed == static_cast<int>(points.size()) && !points.empty())
    warnings.push_back("one seed per size: the losses carry no seed spread, so a point that breaks the law may be "
                       "seed noise; run --seeds 2 or more");
  if (!warnings.empty()) {
    md << "\n## Warnings: thin statistics\n\n";
    for (const std::string& w : warnings) md << "- **warning**: " << w << "\n";
  }
  return md.str();
}

}  // namespace

void write_sweep_report(const std::string& out_dir, const std::vector<SweepPoint>& points, const SweepFit& fit) {
  write_file_atomically(out_dir + "/sweep.csv", csv(points));
  write_file_atomically(out_dir + "/fit.json", json(points, fit));
  write_file_atomically(out_dir + "/report.md", markdown(points, fit));
}

}  // namespace nd::experiments
