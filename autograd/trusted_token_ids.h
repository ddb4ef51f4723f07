// A scope in which ops::embedding trusts its token ids: a caller that checked them on the host
// (the trainer's CUDA graph step validates every batch before upload) skips the op's own check,
// which on the GPU copies the ids to the host, a synchronisation CUDA graph capture forbids.
// Outside such a scope an id outside the vocabulary stays an nd::Error.
#pragma once

namespace nd::ops {

class TrustedTokenIdsGuard {
 public:
  TrustedTokenIdsGuard();
  ~TrustedTokenIdsGuard();
  TrustedTokenIdsGuard(const TrustedTokenIdsGuard&) = delete;
  TrustedTokenIdsGuard& operator=(const TrustedTokenIdsGuard&) = delete;

 private:
  bool previous_;
};

// True inside a TrustedTokenIdsGuard of this thread.
bool token_ids_trusted();

}  // namespace nd::ops
