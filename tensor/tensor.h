// Tensor: a shape, a dtype and a device over a contiguous, reference-counted Storage.
// Views (view/reshape, narrow and select along the leading dimension) share the storage.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tensor/device.h"
#include "tensor/dtype.h"
#include "tensor/error.h"
#include "tensor/storage.h"

namespace nd {

using Shape = std::vector<int64_t>;

std::string shape_str(const Shape& shape);
int64_t shape_numel(const Shape& shape);

class Generator;

class Tensor {
 public:
  Tensor() = default;  // undefined: no storage

  static Tensor empty(const Shape& shape, DType dtype = DType::F32, Device device = Device::cpu());
  static Tensor zeros(const Shape& shape, DType dtype = DType::F32, Device device = Device::cpu());
  static Tensor ones(const Shape& shape, DType dtype = DType::F32, Device device = Device::cpu());
  static Tensor full(const Shape& shape, double value, DType dtype = DType::F32, Device device = Device::cpu());
  static Tensor randn(const Shape& shape, Generator& gen, double mean = 0.0, double std = 1.0,
                      DType dtype = DType::F32, Device device = Device::cpu());
  static Tensor uniform(const Shape& shape, Generator& gen, double low = 0.0, double high = 1.0,
                        DType dtype = DType::F32, Device device = Device::cpu());
  // A CPU tensor holding a copy of `values`, converted to `dtype`.
  static Tensor from_vector(const std::vector<float>& values, const Shape& shape, DType dtype = DType::F32);
  static Tensor from_vector(const std::vector<double>& values, const Shape& shape, DType dtype = DType::F64);
  static Tensor from_vector(const std::vector<int32_t>& values, const Shape& shape);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t size(int dim) const;  // negative dims count from the end
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  std::string str() const;  // e.g. "f32[4, 8] on cpu"

  void* raw_data() const;
  template <typename T>
  T* data() const {
    ND_CHECK(dtype_of<T>::value == dtype_, "tensor is " << dtype_name(dtype_) << ", accessed as "
                                                        << dtype_name(dtype_of<T>::value));
    return static_cast<T*>(raw_data());
  }

  // Same elements, new shape (one dimension may be -1). Shares storage.
  Tensor view(const Shape& shape) const;
  Tensor reshape(const Shape& shape) const { return view(shape); }
  // Rows [start, start + length) of the leading dimension. Shares storage.
  Tensor narrow(int64_t start, int64_t length) const;
  // Row i of the leading dimension, with that dimension dropped. Shares storage.
  Tensor select(int64_t index) const;

  Tensor clone() const;
  Tensor to(Device device) const;  // a copy on `device` (no copy when already there)
  Tensor to(DType dtype) const;    // a converted copy on the same device (CPU only for now)
  void copy_from(const Tensor& src);  // same shape and dtype, any devices
  void zero_();
  void fill_(double value);

  // Host-side reads, converting to double: for tests and small values like a loss.
  double item() const;
  std::vector<double> to_double_vector() const;
  std::vector<float> to_float_vector() const;

  bool shares_storage(const Tensor& other) const { return storage_ && storage_ == other.storage_; }
  const std::shared_ptr<Storage>& storage() const { return storage_; }

 private:
  std::shared_ptr<Storage> storage_;
  int64_t offset_ = 0;  // in elements
  Shape shape_;
  int64_t numel_ = 0;
  DType dtype_ = DType::F32;
  Device device_;
};

// Raises nd::Error unless `t` has exactly `shape`; `what` names the tensor in the message.
void check_shape(const Tensor& t, const Shape& shape, const char* what);
void check_same_shape(const Tensor& a, const Tensor& b, const char* what);
void check_dtype(const Tensor& t, DType dtype, const char* what);
void check_device(const Tensor& t, Device device, const char* what);

}  // namespace nd
