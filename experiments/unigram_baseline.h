// The unigram baseline of a dataset: the cross-entropy (nats per token) of the val tokens under
// the train tokens' frequencies, add-one smoothed. A model that gets no lower than this uses
// nothing of its context; verdict.h calls such a run dead.
#pragma once
#include <string>

namespace nd::experiments {

// Reads DIR/train.bin and DIR/val.bin (at most their first `max_tokens` tokens each).
double unigram_val_loss(const std::string& data_dir, int64_t max_tokens = 50'000'000);

}  // namespace nd::experiments
