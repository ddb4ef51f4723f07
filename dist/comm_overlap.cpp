// The overlap rules of comm_overlap.h: progress at the loaded rate under compute, at the idle rate after.
#include "dist/comm_overlap.h"

#include <algorithm>

#include "tensor/error.h"

namespace nd::dist {

Overlap beside_compute(double alone_us, double loaded_us, double beside_us) {
  ND_CHECK(alone_us >= 0 && loaded_us >= 0 && beside_us >= 0, "beside_compute: times must be >= 0");
  if (beside_us >= loaded_us) return {loaded_us, 0.0};  // done while the compute runs
  const double rest = (1.0 - beside_us / loaded_us) * alone_us;
  return {beside_us + rest, rest};
}

std::vector<Overlap> queue_buckets(const std::vector<QueuedBucket>& buckets, double backward_us) {
  std::vector<Overlap> out;
  double free_at = 0;  // when the comm stream finishes the bucket before
  for (const QueuedBucket& b : buckets) {
    const double start = std::max(b.ready_us, free_at);
    double end = start + b.alone_us;
    if (start < backward_us) {
      const Overlap o = beside_compute(b.alone_us, b.loaded_us, backward_us - start);
      end = start + o.time_us;
    }
    out.push_back({end - start, std::max(0.0, end - std::max(start, backward_us))});
    free_at = end;
  }
  return out;
}

}  // namespace nd::dist
