// The CPU AdamW update of one slot that also takes checksum64 of the old bytes of param, m and v
// on its one pass over them: an asynchronous save's checksums (copy_on_write.h) without a second
// read of the slot. The same bits as cpu::adamw_update (both use adamw_element.h).
#pragma once
#include <cstdint>

#include "kernels/cpu/adamw_element.h"

namespace nd::train {

// param, grad, m, v (n, a multiple of 8), updated in place; sums[0..2]: checksum64 of the n floats
// of param, m and v as they were before.
void adamw_update_checksummed(float* param, const float* grad, float* m, float* v, int64_t n,
                              const cpu::AdamWScalars<float>& s, uint64_t sums[3]);

}  // namespace nd::train
