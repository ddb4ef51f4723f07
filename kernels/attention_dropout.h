// Dropout on the attention probabilities, the rule shared by the CPU and CUDA kernels so that both
// drop the same elements: element (b, h, i, j) of the (B, NH, T, T) probability matrix is kept iff
// philox_uniform(seed, first + ((b * NH + h) * T + i) * T + j, stream) >= p (the rule of ops::dropout).
// Under tensor parallelism a rank holds NH local heads of NH_total; its local head h is global head
// first_head + h and draws that head's mask, so the masks are those of the unsplit model.
// `offset`, when set, points at a counter in the kernel's memory (device memory for CUDA) that adds
// to `first` when the kernel runs (PhiloxCounters of tensor/random.h): kernels call resolved()
// once at their start, so a kernel captured in a CUDA graph draws new masks on every replay.
#pragma once
#include <cstdint>

#include "tensor/philox.h"
#include "tensor/random.h"

namespace nd {

struct AttentionDropout {
  float p = 0.0f;  // 0: no dropout, and no random draw
  uint64_t seed = 0, first = 0, stream = 0;
  const uint64_t* offset = nullptr;
  // Tensor parallelism: local_heads of total_heads heads, starting at global head first_head.
  // total_heads = 0: the kernel sees every head (bh is already global).
  int64_t first_head = 0, local_heads = 0, total_heads = 0;

  ND_HOST_DEVICE bool active() const { return p > 0.0f; }
  // The counters of `rng`: seed, stream, and first relative to rng.offset.
  void set_counters(const PhiloxCounters& rng) {
    seed = rng.seed;
    stream = rng.stream;
    first = rng.first;
    offset = rng.offset;
  }
  // This draw with *offset added to first (read now), so that row_counter gives absolute counters.
  ND_HOST_DEVICE AttentionDropout resolved() const {
    AttentionDropout r = *this;
    if (offset) r.first += *offset;
    r.offset = nullptr;
    return r;
  }
  // What kept probabilities are multiplied by: 1 / (1 - p); 0 when p == 1 (nothing is kept).
  ND_HOST_DEVICE float keep_scale() const { return p < 1.0f ? 1.0f / (1.0f - p) : 0.0f; }
  // Counter of element (i, 0) of head bh = b * NH + h; element (i, j) adds j.
  ND_HOST_DEVICE uint64_t row_counter(int64_t bh, int64_t T, int64_t i) const {
    const int64_t global_bh = total_heads > 0 ? (bh / local_heads) * total_heads + first_head + bh % local_heads : bh;
    return first + (static_cast<uint64_t>(global_bh) * static_cast<uint64_t>(T) + static_cast<uint64_t>(i)) *
                       static_cast<uint64_t>(T);
  }
  ND_HOST_DEVICE bool kept(uint64_t counter) const { return philox_uniform(seed, counter, stream) >= p; }
};

}  // namespace nd
