// Aliases first (a user's habit, whatever the distance), then Levenshtein distance.
#include "cli/flag_suggestion.h"

#include <algorithm>
#include <map>

namespace nd::cli {
namespace {

// nanoGPT config keys and llm.c flags that name one of ours differently (underscores already
// read as dashes).
const std::map<std::string, std::string>& aliases() {
  static const std::map<std::string, std::string> table = {
      {"learning-rate", "lr"},
      {"min-learning-rate", "min-lr"},
      {"gradient-accumulation-steps", "grad-accum"},
      {"out-dir", "out"},
      {"output-dir", "out"},
      {"dataset", "data"},
      {"data-dir", "data"},
      {"max-steps", "max-iters"},
      {"num-iterations", "max-iters"},
      {"iters", "max-iters"},
      {"warmup-steps", "warmup-iters"},
      {"lr-decay-steps", "lr-decay-iters"},
      {"sequence-length", "block-size"},
      {"seq-len", "block-size"},
      {"context-length", "block-size"},
      {"val-loss-every", "eval-interval"},
      {"val-max-steps", "eval-iters"},
      {"checkpoint-every", "ckpt-interval"},
      {"n-layers", "n-layer"},
      {"n-heads", "n-head"},
      {"num-threads", "threads"},
      {"omp-threads", "threads"},
      {"init", "init-from"},
  };
  return table;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string nearest_flag(const std::string& name, const std::vector<std::string>& known) {
  std::string key = name;
  std::replace(key.begin(), key.end(), '_', '-');
  auto alias = aliases().find(key);
  if (alias != aliases().end() && std::find(known.begin(), known.end(), alias->second) != known.end())
    return alias->second;
  std::string best;
  size_t best_distance = 0;
  for (const std::string& k : known) {
    const size_t d = edit_distance(key, k);
    if (best.empty() || d < best_distance) {
      best = k;
      best_distance = d;
    }
  }
  // Close enough to be a typo: at most a third of the name wrong (and at least 2 edits allowed).
  const size_t allowed = std::max<size_t>(2, key.size() / 3);
  return best_distance <= allowed ? best : "";
}

}  // namespace nd::cli
