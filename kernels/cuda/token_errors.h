// Out-of-range token ids met by GPU kernels (embedding ids, cross-entropy targets). Checking them
// on the host before each launch would synchronise the stream (and break CUDA graph capture), so
// a kernel records the first bad id in a per-device record and carries on safely; the host asks
// once per step, where it reads results back anyway.
#pragma once
#include <cstdint>

namespace nd::cuda {

// Which op recorded a bad id.
enum TokenErrorOp : int { kNoTokenError = 0, kEmbeddingTokenError = 1, kCrossEntropyTokenError = 2 };

// The first bad id seen since the last check: op (kNoTokenError when none), the id, its index in
// the op's ids (position or row), and the vocabulary size it had to be below.
struct TokenError {
  int op;
  int id;
  long long index;
  long long vocab;
};

// The current device's record in device memory (static storage, zero at start).
TokenError* token_error_record();

// Raises the nd::Error of the bad id recorded on `device` since the last check, in the words the
// CPU kernels use, and clears the record; does nothing when none was recorded. Reads 24 bytes back:
// waits for the device's compute stream. Never call it while that stream is being captured.
void check_token_errors(int device);

}  // namespace nd::cuda
