// Lists of tensors for the kernels that sweep every parameter in one launch (AdamW, global norm):
// the slots are uploaded to device memory once, when the list of parameters is built, so a
// training step passes one pointer and the kernels read each tensor's address and size from it.
#pragma once
#include <cstdint>
#include <vector>

#include "tensor/device.h"
#include "tensor/error.h"
#include "tensor/storage.h"

namespace nd::cuda {

// A device-resident copy of `slots`, freed when this object goes.
template <typename Slot>
class DeviceSlots {
 public:
  DeviceSlots() = default;
  DeviceSlots(const std::vector<Slot>& slots, int device) : count_(static_cast<int>(slots.size())), device_(device) {
    for (const Slot& s : slots) max_n_ = s.n > max_n_ ? s.n : max_n_;
    if (slots.empty()) return;
    size_t bytes = slots.size() * sizeof(Slot);
    data_ = static_cast<Slot*>(device_alloc(bytes, device));
    copy_bytes(data_, Device::cuda(device), slots.data(), Device::cpu(), bytes);
  }
  ~DeviceSlots() {
    if (data_) device_free(data_, device_);
  }
  DeviceSlots(const DeviceSlots&) = delete;
  DeviceSlots& operator=(const DeviceSlots&) = delete;

  const Slot* data() const { return data_; }
  int count() const { return count_; }
  int64_t max_n() const { return max_n_; }

 private:
  Slot* data_ = nullptr;
  int count_ = 0;
  int64_t max_n_ = 0;
  int device_ = 0;
};

}  // namespace nd::cuda
