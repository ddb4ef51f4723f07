// Token frequencies of train.bin scored on val.bin.
#include "experiments/unigram_baseline.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "train/run/run_files.h"

namespace nd::experiments {

double unigram_val_loss(const std::string& data_dir, int64_t max_tokens) {
  train::RunData data = train::open_run_data(data_dir);
  const int64_t vocab = data.vocab_size;
  std::vector<double> counts(static_cast<size_t>(vocab), 1.0);  // add-one: unseen tokens stay finite
  const int64_t n_train = std::min(data.train->size(), max_tokens);
  for (int64_t i = 0; i < n_train; ++i) counts[static_cast<size_t>((*data.train)[i])] += 1.0;
  const double total = static_cast<double>(n_train + vocab);
  const int64_t n_val = std::min(data.val->size(), max_tokens);
  double nll = 0;
  for (int64_t i = 0; i < n_val; ++i) nll -= std::log(counts[static_cast<size_t>((*data.val)[i])] / total);
  return n_val > 0 ? nll / static_cast<double>(n_val) : 0.0;
}

}  // namespace nd::experiments
