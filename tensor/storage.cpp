#include "tensor/storage.h"

#include <cstdlib>
#include <cstring>

#include "tensor/error.h"

namespace nd {

namespace {
constexpr size_t kHostAlignment = 64;  // one cache line, and enough for AVX-512 loads
}

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  if (nbytes == 0) return;
  if (device.is_cpu()) {
    size_t rounded = (nbytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
    data_ = std::aligned_alloc(kHostAlignment, rounded);
    ND_CHECK(data_ != nullptr, "out of host memory allocating " << nbytes << " bytes");
  } else {
    data_ = device_alloc(nbytes, device.index);
  }
}

Storage::~Storage() {
  if (!data_) return;
  if (device_.is_cpu()) {
    std::free(data_);
  } else {
    device_free(data_, device_.index);
  }
}

}  // namespace nd
