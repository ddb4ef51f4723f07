// The overlap rules of comm_overlap.h: a collective beside a persistent GEMM waits for it, then
// runs at the idle speed; buckets queue on one stream.
#include "dist/parallel/plan/comm_overlap.h"

#include <algorithm>

#include "tensor/error.h"

namespace nd::dist {

Overlap after_gemm(double idle_us, double gemm_us) {
  ND_CHECK(idle_us >= 0 && gemm_us >= 0, "after_gemm: times must be >= 0");
  return {gemm_us + idle_us, idle_us};
}

std::vector<Overlap> queue_buckets(const std::vector<QueuedBucket>& buckets, double backward_us) {
  std::vector<Overlap> out;
  double free_at = 0;  // when the comm stream finishes the bucket before
  for (const QueuedBucket& b : buckets) {
    ND_CHECK(b.ready_us >= 0 && b.idle_us >= 0 && b.wait_us >= 0, "queue_buckets: times must be >= 0");
    const double issued = std::max(b.ready_us, free_at);
    const double start = free_at > b.ready_us ? free_at : b.ready_us + b.wait_us;
    const double end = start + b.idle_us;
    out.push_back({end - issued, std::max(0.0, end - std::max(issued, backward_us))});
    free_at = end;
  }
  return out;
}

}  // namespace nd::dist
