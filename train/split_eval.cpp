// Whole-split scoring: this rank's windows (split_eval.h), batched forwards without gradients,
// and one sum over the ranks.
#include "train/split_eval.h"

#include <algorithm>

#include "autograd/variable.h"
#include "tensor/error.h"

namespace nd::train {
namespace {

// Loss sum of `count` windows of `length` positions starting at `first` (consecutive windows
// step by `length`): inputs and targets (count, length), one forward.
double window_loss_sum(const nn::GPT& model, const TokenSource& tokens, const ScoreWindow* first, int64_t count) {
  const int64_t length = first->length;
  Tensor inputs = Tensor::empty({count, length}, DType::I32), targets = Tensor::empty({count, length}, DType::I32);
  for (int64_t b = 0; b < count; ++b) {
    tokens.copy(first[b].start, length, inputs.data<int32_t>() + b * length);
    tokens.copy(first[b].start + 1, length, targets.data<int32_t>() + b * length);
  }
  Tensor on_device_inputs = inputs.to(model.device()), on_device_targets = targets.to(model.device());
  // Dropout is off in eval mode, so this generator is never drawn from.
  Generator unused(0, 0);
  const double mean = model.forward(on_device_inputs, &on_device_targets, unused).loss.data().item();
  return mean * static_cast<double>(count * length);
}

}  // namespace

std::vector<ScoreWindow> windows_of_rank(int64_t pairs, int64_t block_size, int rank, int world_size) {
  ND_CHECK(pairs >= 0 && block_size > 0, "windows_of_rank: pairs " << pairs << ", block size " << block_size);
  ND_CHECK(world_size > 0 && rank >= 0 && rank < world_size, "rank " << rank << " outside a world of " << world_size);
  const int64_t full = pairs / block_size, rest = pairs % block_size;
  // Rank r takes full windows [full * r / N, full * (r + 1) / N): shares differ by at most one.
  const int64_t begin = full * rank / world_size, end = full * (rank + 1) / world_size;
  std::vector<ScoreWindow> out;
  for (int64_t w = begin; w < end; ++w) out.push_back({w * block_size, block_size});
  if (rest > 0 && rank == world_size - 1) out.push_back({full * block_size, rest});
  return out;
}

SplitScore score_split(const nn::GPT& model, const TokenSource& tokens, int64_t max_pairs, int64_t batch_size,
                       dist::Comm* comm) {
  const int64_t T = model.config().block_size;
  ND_CHECK_INPUT(batch_size > 0, "--batch-size must be positive, got " << batch_size);
  ND_CHECK_INPUT(max_pairs >= 0, "--max-tokens must be >= 0 (0 = the whole split), got " << max_pairs);
  ND_CHECK_INPUT(tokens.size() >= T + 1, tokens.name() << " has " << tokens.size() << " tokens, fewer than one window"
                                                      << " of the model's block size " << T << " + 1 = " << T + 1);
  ND_CHECK_INPUT(tokens.vocab_size() <= model.config().vocab_size,
                 tokens.name() << " has a vocabulary of " << tokens.vocab_size() << " tokens, the model "
                               << model.config().vocab_size);
  const int64_t pairs = max_pairs > 0 ? std::min(max_pairs, tokens.size() - 1) : tokens.size() - 1;
  const int rank = comm ? comm->rank() : 0, world_size = comm ? comm->size() : 1;
  const std::vector<ScoreWindow> windows = windows_of_rank(pairs, T, rank, world_size);

  NoGradGuard no_grad;
  double sums[2] = {0.0, 0.0};  // loss sum, tokens (a double holds counts exactly up to 2^53)
  for (size_t i = 0; i < windows.size();) {
    // Up to batch_size windows of one length (only the last window may be shorter).
    size_t n = 1;
    while (i + n < windows.size() && static_cast<int64_t>(n) < batch_size && windows[i + n].length == windows[i].length)
      ++n;
    sums[0] += window_loss_sum(model, tokens, &windows[i], static_cast<int64_t>(n));
    sums[1] += static_cast<double>(static_cast<int64_t>(n) * windows[i].length);
    i += n;
  }
  if (comm != nullptr && comm->size() > 1) comm->host_allreduce(sums, 2, dist::HostReduce::Sum);
  SplitScore score;
  score.loss_sum = sums[0];
  score.tokens = static_cast<int64_t>(sums[1]);
  return score;
}

}  // namespace nd::train
