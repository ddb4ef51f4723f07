// Reading metrics.jsonl: a small parser for the trainer's flat JSON lines, and the restart rule.
#include "experiments/run_metrics.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>

#include "data/json_value.h"
#include "tensor/error.h"

namespace nd::experiments {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Cursor {
  const std::string& s;
  size_t i = 0;
  void skip_space() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) ++i;
  }
  bool eat(char c) {
    skip_space();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  bool word(const char* w) {
    skip_space();
    size_t n = std::char_traits<char>::length(w);
    if (s.compare(i, n, w) != 0) return false;
    i += n;
    return true;
  }
  bool string(std::string* out) {
    if (!eat('"')) return false;
    out->clear();
    while (i < s.size() && s[i] != '"') {
      if (s[i] == '\\' && i + 1 < s.size()) ++i;
      out->push_back(s[i++]);
    }
    if (i >= s.size()) return false;
    ++i;
    return true;
  }
  bool number(double* out) {
    skip_space();
    const char* begin = s.c_str() + i;
    char* end = nullptr;
    *out = std::strtod(begin, &end);
    if (end == begin) return false;
    i += static_cast<size_t>(end - begin);
    return true;
  }
};

double field(const std::vector<std::pair<std::string, double>>& fields, const char* key, double fallback) {
  for (const auto& [k, v] : fields)
    if (k == key) return v;
  return fallback;
}

bool has(const std::vector<std::pair<std::string, double>>& fields, const char* key) {
  for (const auto& kv : fields)
    if (kv.first == key) return true;
  return false;
}

// Drops records at or after `step`: a resumed attempt is about to write them again.
template <typename Record>
void drop_from(std::vector<Record>& records, int64_t step) {
  while (!records.empty() && records.back().step >= step) records.pop_back();
}

double number_or_nan(const JsonValue* v) {
  return v && v->kind == JsonValue::Kind::Number ? v->as_double("a statistic") : kNaN;
}

// A --layer-stats record: the per-block statistics the report compares.
LayerStatsRecord layer_stats_record(const JsonValue& v) {
  LayerStatsRecord r;
  r.step = v.find("step")->as_int("step");
  const JsonValue* blocks = v.find("layer_stats")->find("blocks");
  if (!blocks) return r;
  for (const JsonValue& b : blocks->items)
    r.blocks.push_back(BlockStatsRecord{number_or_nan(b.find("grad_norm")), number_or_nan(b.find("resid_rms")),
                                        number_or_nan(b.find("attn_rms")), number_or_nan(b.find("mlp_rms"))});
  return r;
}

}  // namespace

bool parse_flat_json(const std::string& line, std::vector<std::pair<std::string, double>>* fields) {
  fields->clear();
  Cursor c{line};
  if (!c.eat('{')) return false;
  if (c.eat('}')) return true;
  do {
    std::string key, text;
    double value = 0;
    if (!c.string(&key) || !c.eat(':')) return false;
    c.skip_space();
    if (c.word("null")) value = kNaN;
    else if (c.word("true")) value = 1;
    else if (c.word("false")) value = 0;
    else if (c.i < line.size() && line[c.i] == '"') {
      if (!c.string(&text)) return false;
      continue;
    } else if (!c.number(&value)) return false;
    fields->emplace_back(key, value);
  } while (c.eat(','));
  if (!c.eat('}')) return false;
  c.skip_space();
  return c.i == line.size();
}

RunMetrics read_run_metrics(const std::string& path) {
  RunMetrics m;
  std::ifstream in(path);
  if (!in.good()) return m;
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::vector<std::pair<std::string, double>> f;
  for (size_t n = 0; n < lines.size(); ++n) {
    if (lines[n].find_first_not_of(" \t\r") == std::string::npos) continue;
    if (lines[n].find("\"layer_stats\"") != std::string::npos) {
      JsonValue v;
      try {
        v = parse_json(lines[n], path);
      } catch (const Error&) {
        ND_CHECK_INPUT(n + 1 == lines.size(), "malformed record at " << path << ":" << n + 1);
        break;  // cut short by a crash
      }
      ND_CHECK_INPUT(v.find("step") && v.find("layer_stats"), "malformed layer_stats record at " << path << ":" << n + 1);
      LayerStatsRecord r = layer_stats_record(v);
      drop_from(m.layer_stats, r.step);
      m.layer_stats.push_back(std::move(r));
      continue;
    }
    if (!parse_flat_json(lines[n], &f)) {
      ND_CHECK_INPUT(n + 1 == lines.size(), "malformed record at " << path << ":" << n + 1 << ": '" << lines[n] << "'");
      break;  // a record cut short by a crash: the run is unfinished
    }
    if (has(f, "final")) {
      m.finished = true;
      m.best_val_loss = field(f, "best_val_loss", kNaN);
      m.params = static_cast<int64_t>(field(f, "params", 0));
      m.tokens = static_cast<int64_t>(field(f, "tokens", 0));
      continue;
    }
    ND_CHECK_INPUT(has(f, "step"), "record without a step at " << path << ":" << n + 1);
    const auto step = static_cast<int64_t>(field(f, "step", 0));
    m.finished = false;
    if (has(f, "val_loss")) {
      drop_from(m.evals, step);
      m.evals.push_back(EvalRecord{step, field(f, "val_loss", kNaN), field(f, "train_loss", kNaN)});
    } else {
      drop_from(m.steps, step);
      drop_from(m.evals, step);
      drop_from(m.layer_stats, step + 1);  // the trainer writes a step's statistics before its step record
      m.steps.push_back(StepRecord{step, field(f, "loss", kNaN), field(f, "lr", kNaN), field(f, "grad_norm", kNaN),
                                   field(f, "tok_per_s", kNaN), field(f, "mfu", kNaN)});
    }
  }
  return m;
}

}  // namespace nd::experiments
