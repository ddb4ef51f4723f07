#include "tensor/random.h"

#include "tensor/philox.h"

namespace nd {

float Generator::next_uniform() { return philox_uniform(seed_, advance(1), stream_); }

uint64_t Generator::next_u64() {
  Philox4 r = philox4x32(seed_, advance(1), stream_);
  return (static_cast<uint64_t>(r.v[0]) << 32) | r.v[1];
}

}  // namespace nd
