// Autoregressive sampling with temperature and top-k (no KV cache: each token reruns the window).
#include "train/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tensor/error.h"

namespace nd::train {

int32_t pick_token(const std::vector<float>& logits, const SampleOptions& o, Generator& gen) {
  ND_CHECK(!logits.empty(), "pick_token: empty logits");
  const int64_t V = static_cast<int64_t>(logits.size());
  if (o.temperature <= 0.0)
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  std::vector<double> scaled(logits.begin(), logits.end());
  for (double& x : scaled) x /= o.temperature;
  if (o.top_k > 0 && o.top_k < V) {
    std::vector<double> sorted = scaled;
    std::nth_element(sorted.begin(), sorted.begin() + (o.top_k - 1), sorted.end(), std::greater<double>());
    double kth = sorted[static_cast<size_t>(o.top_k - 1)];
    for (double& x : scaled)
      if (x < kth) x = -std::numeric_limits<double>::infinity();
  }
  double top = *std::max_element(scaled.begin(), scaled.end());
  double total = 0.0;
  for (double& x : scaled) {
    x = std::exp(x - top);
    total += x;
  }
  if (o.top_p < 1.0) {
    // The likeliest tokens in turn until they hold top_p of the mass; the rest get none. Ties at
    // the edge stay in, so the kept set does not depend on the sort's order among equals.
    std::vector<double> sorted = scaled;
    std::sort(sorted.begin(), sorted.end(), std::greater<double>());
    double kept = 0.0, edge = sorted.front();
    for (double p : sorted) {
      edge = p;
      kept += p;
      if (kept >= o.top_p * total) break;
    }
    total = 0.0;
    for (double& x : scaled) {
      if (x < edge) x = 0.0;
      total += x;
    }
  }
  double u = static_cast<double>(gen.next_uniform()) * total;
  for (int64_t i = 0; i < V; ++i) {
    u -= scaled[static_cast<size_t>(i)];
    if (u < 0.0) return static_cast<int32_t>(i);
  }
  // Rounding left a sliver of mass: take the last token that has any.
  for (int64_t i = V - 1; i >= 0; --i)
    if (scaled[static_cast<size_t>(i)] > 0.0) return static_cast<int32_t>(i);
  return 0;
}

std::vector<int32_t> generate(nn::GPT& model, std::vector<int32_t> context, const SampleOptions& options,
                              Generator& gen) {
  ND_CHECK(!context.empty(), "generate: the context needs at least one token");
  ND_CHECK(options.max_new_tokens >= 0, "generate: max_new_tokens is " << options.max_new_tokens);
  const nn::GPTConfig& c = model.config();
  bool was_training = model.training();
  model.set_training(false);
  NoGradGuard no_grad;
  Generator no_dropout(0, 0);
  for (int n = 0; n < options.max_new_tokens; ++n) {
    size_t T = std::min(context.size(), static_cast<size_t>(c.block_size));
    std::vector<int32_t> window(context.end() - static_cast<std::ptrdiff_t>(T), context.end());
    Tensor idx = Tensor::from_vector(window, {1, static_cast<int64_t>(T)}).to(model.device());
    Tensor logits = model.forward(idx, nullptr, no_dropout).logits.data().to(Device::cpu());
    Tensor last = logits.select(0).select(static_cast<int64_t>(T) - 1);  // (Vp)
    std::vector<float> row = last.to_float_vector();
    row.resize(static_cast<size_t>(c.vocab_size));  // padding columns are never predicted
    context.push_back(pick_token(row, options, gen));
    if (options.stop && options.stop(std::vector<int32_t>(context.end() - (n + 1), context.end()))) break;
  }
  model.set_training(was_training);
  return context;
}

}  // namespace nd::train
