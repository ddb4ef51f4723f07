// pick_token's truncations against the distribution written out here: top-k keeps the k likeliest,
// top-p the fewest likeliest holding p of the mass, and the draws follow the renormalised rest.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "train/sampler.h"

namespace nd::train {
namespace {

// Frequencies of each token over `draws` picks.
std::vector<double> frequencies(const std::vector<float>& logits, const SampleOptions& o, int draws) {
  Generator gen(11, 3);
  std::vector<double> f(logits.size(), 0.0);
  for (int i = 0; i < draws; ++i) f[static_cast<size_t>(pick_token(logits, o, gen))] += 1.0 / draws;
  return f;
}

// Probabilities 0.5, 0.3, 0.15, 0.05 at temperature 1.
const std::vector<float> kLogits = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};

TEST(Sampler, TopPKeepsTheFewestTokensHoldingP) {
  SampleOptions o;
  o.temperature = 1.0;
  o.top_k = 0;
  o.top_p = 0.7;  // 0.5 < 0.7 <= 0.5 + 0.3: the first two, renormalised to 5/8 and 3/8
  std::vector<double> f = frequencies(kLogits, o, 20000);
  EXPECT_NEAR(f[0], 5.0 / 8.0, 0.02);
  EXPECT_NEAR(f[1], 3.0 / 8.0, 0.02);
  EXPECT_EQ(f[2], 0.0);
  EXPECT_EQ(f[3], 0.0);
  o.top_p = 0.5;  // the first alone holds it
  f = frequencies(kLogits, o, 200);
  EXPECT_EQ(f[1] + f[2] + f[3], 0.0);
  o.top_p = 1.0;  // no truncation: the last token is drawn about 5% of the time
  EXPECT_NEAR(frequencies(kLogits, o, 20000)[3], 0.05, 0.01);
}

TEST(Sampler, TopKThenTopP) {
  SampleOptions o;
  o.temperature = 1.0;
  o.top_k = 3;    // 0.5, 0.3, 0.15 renormalised over 0.95
  o.top_p = 0.9;  // 0.5/0.95 + 0.3/0.95 = 0.84 < 0.9: all three stay
  std::vector<double> f = frequencies(kLogits, o, 20000);
  EXPECT_NEAR(f[2], 0.15 / 0.95, 0.02);
  EXPECT_EQ(f[3], 0.0);
}

TEST(Sampler, GreedyIgnoresTruncation) {
  SampleOptions o;
  o.temperature = 0.0;
  o.top_p = 0.1;
  Generator gen(1, 3);
  EXPECT_EQ(pick_token(kLogits, o, gen), 0);
}

}  // namespace
}  // namespace nd::train
