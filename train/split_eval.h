// Scoring a whole token split with a model (`nanodist eval`): the mean next-token loss with every
// target token counted exactly once.
//
// A split of n tokens holds n - 1 (input, target) pairs: token i + 1 is the target of token i
// (token 0 is no one's target). With T = the model's block size, window w has the inputs
// [w*T, w*T + T) and their targets [w*T + 1, w*T + T + 1): windows step by T, so they never
// overlap and together cover every pair once. The r = (n - 1) mod T pairs left after the full
// windows form one last, shorter window, run with r positions (the model takes any T' <= T), not
// padded. Each window starts a fresh context, as in training: its first target is predicted from
// one token, its last from T. The ranks of `comm` take consecutive runs of windows (the short
// window goes to the last rank) and the sums of loss and count are added over the ranks.
#pragma once
#include <cstdint>
#include <vector>

#include "data/token_source.h"
#include "dist/comm/comm.h"
#include "nn/gpt.h"

namespace nd::train {

struct SplitScore {
  double loss_sum = 0.0;  // sum of the per-token cross-entropies (nats)
  int64_t tokens = 0;     // target tokens scored
  double mean_loss() const { return tokens > 0 ? loss_sum / static_cast<double>(tokens) : 0.0; }
};

// The (start, length) windows of this rank: `pairs` (input, target) pairs from token 0, cut as
// above, rank `rank` of `world_size` taking its consecutive share.
struct ScoreWindow {
  int64_t start = 0;   // first input token
  int64_t length = 0;  // positions: T, or fewer for the last window
};
std::vector<ScoreWindow> windows_of_rank(int64_t pairs, int64_t block_size, int rank, int world_size);

// Scores the first `max_pairs` pairs of `tokens` (0 = all n - 1) with `model` (in eval mode: no
// dropout), `batch_size` windows per forward. Collective over `comm` (null = one rank): every
// rank gets the same total. nd::Error (input) when the split is shorter than one full window
// (T + 1 tokens) or a token lies outside the model's vocabulary.
SplitScore score_split(const nn::GPT& model, const TokenSource& tokens, int64_t max_pairs, int64_t batch_size,
                       dist::Comm* comm);

}  // namespace nd::train
