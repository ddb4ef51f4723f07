// How much of a collective the compute beside it hides, for `nanodist plan`. Hopper's cuBLASLt
// GEMMs (and the attention's backward) are persistent kernels that hold every SM until they end,
// so a collective issued beside one first waits for it, then runs at the idle GPU's speed: its
// time is the GEMM's plus its idle time, and the op after the GEMM, which needs its result, waits
// for all of the idle part. Data parallelism's buckets are queued on one stream behind the
// backward that readies them: a small simulation of that queue gives each bucket's time and
// exposed part.
#pragma once
#include <cstdint>
#include <vector>

namespace nd::dist {

struct Overlap {
  double time_us = 0;     // the collective's duration, from its issue (a wait for the GEMM included)
  double exposed_us = 0;  // the part the compute stream waits for
};

// A collective of `idle_us` on an idle GPU issued beside a GEMM of `gemm_us` whose result the op
// after the GEMM needs: {gemm_us + idle_us, idle_us}. No GEMM beside (0): {idle_us, idle_us}.
Overlap after_gemm(double idle_us, double gemm_us);

// One data-parallel bucket: when backward has made its gradients final (us from backward's start),
// its collective's idle time, and the kernel that holds the SMs when it is issued (the backward
// kernel after the one that readied it; 0 where none does, e.g. in backward's tail).
struct QueuedBucket {
  double ready_us = 0;
  double idle_us = 0;
  double wait_us = 0;
};

// The buckets reduced in order on one stream. A bucket issued to an idle stream starts once the
// kernel in flight ends (ready + wait); one queued behind the bucket before it starts as that one
// ends (the kernel in flight has all its blocks placed, so the SMs the bucket before frees are
// this one's). Each runs for its idle time. Per bucket: its time from issue (its ready time, or
// the end of the one before: a trace's span starts there) and the part after backward ended (what
// the optimizer waits for).
std::vector<Overlap> queue_buckets(const std::vector<QueuedBucket>& buckets, double backward_us);

}  // namespace nd::dist
