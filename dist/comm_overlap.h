// How much of a collective the compute beside it hides, for `nanodist plan`: a collective beside
// a GEMM of G us runs at the rate measured under a GEMM load (the loaded fit, `bench-comm --load
// gemm`) while the GEMM runs and at the idle GPU's rate after it; only what is left when the GEMM
// ends is exposed. Data parallelism's buckets are queued on one stream behind the backward that
// readies them: a small simulation of that queue gives each bucket's time and exposed part.
#pragma once
#include <cstdint>
#include <vector>

namespace nd::dist {

struct Overlap {
  double time_us = 0;     // the collective's duration
  double exposed_us = 0;  // the part after the compute beside it ended
};

// A collective that takes `alone_us` on an idle GPU and `loaded_us` beside a GEMM, started with
// `beside_us` of compute beside it (0: none, all exposed): the fraction beside_us / loaded_us is
// done under the compute, the rest at the idle rate after it.
Overlap beside_compute(double alone_us, double loaded_us, double beside_us);

// One data-parallel bucket: when backward has made its gradients final (us from backward's start)
// and its collective's times alone and under load.
struct QueuedBucket {
  double ready_us = 0;
  double alone_us = 0, loaded_us = 0;
};

// The buckets reduced in order on one stream, each once it is ready and the one before it ended;
// while backward runs (until backward_us) at the loaded rate, after it at the idle rate. Each
// bucket's duration and the part of it after backward ended (what the optimizer waits for).
std::vector<Overlap> queue_buckets(const std::vector<QueuedBucket>& buckets, double backward_us);

}  // namespace nd::dist
