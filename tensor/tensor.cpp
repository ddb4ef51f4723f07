#include "tensor/tensor.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <sstream>

#include "tensor/philox.h"
#include "tensor/random.h"

namespace nd {

namespace {

double read_element(const void* base, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::F32: return static_cast<const float*>(base)[i];
    case DType::F64: return static_cast<const double*>(base)[i];
    case DType::BF16: return bf16_to_f32(static_cast<const bf16*>(base)[i]);
    case DType::F16: return f16_to_f32(static_cast<const f16*>(base)[i]);
    case DType::I32: return static_cast<const int32_t*>(base)[i];
    case DType::U16: return static_cast<const uint16_t*>(base)[i];
  }
  return 0.0;
}

void write_element(void* base, DType dtype, int64_t i, double v) {
  switch (dtype) {
    case DType::F32: static_cast<float*>(base)[i] = static_cast<float>(v); break;
    case DType::F64: static_cast<double*>(base)[i] = v; break;
    case DType::BF16: static_cast<bf16*>(base)[i] = f32_to_bf16(static_cast<float>(v)); break;
    case DType::F16: static_cast<f16*>(base)[i] = f32_to_f16(static_cast<float>(v)); break;
    case DType::I32: static_cast<int32_t*>(base)[i] = static_cast<int32_t>(v); break;
    case DType::U16: static_cast<uint16_t*>(base)[i] = static_cast<uint16_t>(v); break;
  }
}

// Runs fill(begin, n) over [p, p + nbytes) in 4 MiB pieces (a multiple of every element size, so
// no piece splits an element), spread over the OpenMP threads when there are several: the first
// touch of fresh pages (page faults, the kernel clearing them) is most of the cost of filling
// gigabytes of optimizer state, and it parallelises.
template <typename Fill>
void fill_host_bytes(void* p, size_t nbytes, Fill fill) {
  constexpr size_t kPiece = size_t{1} << 22;
  char* base = static_cast<char*>(p);
  const int64_t pieces = static_cast<int64_t>((nbytes + kPiece - 1) / kPiece);
#pragma omp parallel for schedule(static) if (pieces > 1)
  for (int64_t i = 0; i < pieces; ++i) {
    const size_t begin = static_cast<size_t>(i) * kPiece;
    fill(base + begin, std::min(kPiece, nbytes - begin));
  }
}

// Fills a CPU tensor element by element, then moves it to `device`. Used for initialisation
// only, so the per-element cost does not matter, and CPU and GPU get identical values.
template <typename Fn>
Tensor generate(const Shape& shape, DType dtype, Device device, Fn value_at) {
  Tensor host = Tensor::empty(shape, dtype, Device::cpu());
  void* p = host.raw_data();
  for (int64_t i = 0; i < host.numel(); ++i) write_element(p, dtype, i, value_at(i));
  return host.to(device);
}

}  // namespace

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    ND_CHECK(d >= 0, "negative dimension in shape " << shape_str(shape));
    // A wrapped count would allocate too little and be written past (readers check files first).
    ND_CHECK(!__builtin_mul_overflow(n, d, &n), "shape " << shape_str(shape) << " has more than 2^63 elements");
  }
  return n;
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  Tensor t;
  t.shape_ = shape;
  t.numel_ = shape_numel(shape);
  t.dtype_ = dtype;
  t.device_ = device;
  ND_CHECK(t.numel_ <= std::numeric_limits<int64_t>::max() / static_cast<int64_t>(dtype_size(dtype)),
           "shape " << shape_str(shape) << " of " << dtype_name(dtype) << " needs more than 2^63 bytes");
  if (!device.is_cpu()) {
    t.storage_ = std::make_shared<Storage>(t.nbytes(), device);
    return t;
  }
  // Host memory running out is the user's sizes meeting the machine: say which tensor it was.
  try {
    t.storage_ = std::make_shared<Storage>(t.nbytes(), device);
  } catch (const Error& e) {
    ND_FAIL(e.message() << " allocating a " << shape_str(shape) << " " << dtype_name(dtype) << " tensor");
  }
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.zero_();
  return t;
}

Tensor Tensor::ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1.0, dtype, device); }

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.fill_(value);
  return t;
}

Tensor Tensor::randn(const Shape& shape, Generator& gen, double mean, double std, DType dtype, Device device) {
  uint64_t first = gen.advance(static_cast<uint64_t>(shape_numel(shape)));
  return generate(shape, dtype, device, [&](int64_t i) {
    return mean + std * static_cast<double>(philox_normal(gen.seed(), first + i, gen.stream()));
  });
}

Tensor Tensor::uniform(const Shape& shape, Generator& gen, double low, double high, DType dtype, Device device) {
  uint64_t first = gen.advance(static_cast<uint64_t>(shape_numel(shape)));
  return generate(shape, dtype, device, [&](int64_t i) {
    return low + (high - low) * static_cast<double>(philox_uniform(gen.seed(), first + i, gen.stream()));
  });
}

Tensor Tensor::from_vector(const std::vector<float>& values, const Shape& shape, DType dtype) {
  ND_CHECK(static_cast<int64_t>(values.size()) == shape_numel(shape),
           values.size() << " values do not fill shape " << shape_str(shape));
  return generate(shape, dtype, Device::cpu(), [&](int64_t i) { return values[i]; });
}

Tensor Tensor::from_vector(const std::vector<double>& values, const Shape& shape, DType dtype) {
  ND_CHECK(static_cast<int64_t>(values.size()) == shape_numel(shape),
           values.size() << " values do not fill shape " << shape_str(shape));
  return generate(shape, dtype, Device::cpu(), [&](int64_t i) { return values[i]; });
}

Tensor Tensor::from_vector(const std::vector<int32_t>& values, const Shape& shape) {
  ND_CHECK(static_cast<int64_t>(values.size()) == shape_numel(shape),
           values.size() << " values do not fill shape " << shape_str(shape));
  Tensor t = empty(shape, DType::I32);
  if (!values.empty()) std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(int32_t));
  return t;
}

int64_t Tensor::size(int dim) const {
  int d = dim < 0 ? dim + ndim() : dim;
  ND_CHECK(d >= 0 && d < ndim(), "dimension " << dim << " out of range for shape " << shape_str(shape_));
  return shape_[d];
}

std::string Tensor::str() const {
  if (!defined()) return "undefined tensor";
  return std::string(dtype_name(dtype_)) + shape_str(shape_) + " on " + device_.str();
}

void* Tensor::raw_data() const {
  ND_CHECK(defined(), "access to an undefined tensor");
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(dtype_size(dtype_));
}

Tensor Tensor::view(const Shape& shape) const {
  ND_CHECK(defined(), "view of an undefined tensor");
  Shape out = shape;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      ND_CHECK(infer < 0, "view " << shape_str(shape) << " has more than one -1");
      infer = static_cast<int>(i);
    } else {
      ND_CHECK(out[i] >= 0, "view " << shape_str(shape) << " has a negative dimension");
      known *= out[i];
    }
  }
  if (infer >= 0) {
    ND_CHECK(known > 0 && numel_ % known == 0,
             "cannot view " << str() << " as " << shape_str(shape));
    out[infer] = numel_ / known;
  }
  ND_CHECK(shape_numel(out) == numel_, "cannot view " << str() << " as " << shape_str(shape)
                                                      << ": element counts differ");
  Tensor t = *this;
  t.shape_ = out;
  return t;
}

Tensor Tensor::narrow(int64_t start, int64_t length) const {
  ND_CHECK(ndim() >= 1, "narrow of a 0-d tensor");
  ND_CHECK(start >= 0 && length >= 0 && start + length <= shape_[0],
           "narrow [" << start << ", " << start + length << ") out of range for " << str());
  Tensor t = *this;
  int64_t row = shape_[0] ? numel_ / shape_[0] : 0;
  t.offset_ += start * row;
  t.shape_[0] = length;
  t.numel_ = length * row;
  return t;
}

Tensor Tensor::select(int64_t index) const {
  Tensor t = narrow(index, 1);
  t.shape_.erase(t.shape_.begin());
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = empty(shape_, dtype_, device_);
  t.copy_from(*this);
  return t;
}

Tensor Tensor::to(Device device) const {
  if (device == device_) return *this;
  Tensor t = empty(shape_, dtype_, device);
  t.copy_from(*this);
  return t;
}

Tensor Tensor::to(DType dtype) const {
  if (dtype == dtype_) return *this;
  if (device_.is_cuda() && device_can_convert(dtype) && device_can_convert(dtype_)) {
    Tensor out = empty(shape_, dtype, device_);
    device_convert(out.raw_data(), dtype, raw_data(), dtype_, numel_, device_.index);
    return out;
  }
  Tensor host = to(Device::cpu());
  Tensor out = empty(shape_, dtype, Device::cpu());
  const void* src = host.raw_data();
  void* dst = out.raw_data();
  for (int64_t i = 0; i < numel_; ++i) write_element(dst, dtype, i, read_element(src, dtype_, i));
  return out.to(device_);
}

void Tensor::copy_from(const Tensor& src) {
  ND_CHECK(src.shape_ == shape_, "copy from " << src.str() << " into " << str() << ": shapes differ");
  ND_CHECK(src.dtype_ == dtype_, "copy from " << src.str() << " into " << str() << ": dtypes differ");
  copy_bytes(raw_data(), device_, src.raw_data(), src.device_, nbytes());
}

void Tensor::zero_() {
  if (numel_ == 0) return;
  if (device_.is_cpu()) {
    fill_host_bytes(raw_data(), nbytes(), [](char* begin, size_t n) { std::memset(begin, 0, n); });
  } else {
    device_memset_zero(raw_data(), nbytes(), device_.index);
  }
}

void Tensor::fill_(double value) {
  if (numel_ == 0) return;
  alignas(8) char element[8];
  write_element(element, dtype_, 0, value);
  const size_t size = dtype_size(dtype_);
  if (device_.is_cuda()) {
    device_fill(raw_data(), element, size, numel_, device_.index);
    return;
  }
  fill_host_bytes(raw_data(), nbytes(), [&](char* begin, size_t n) {
    for (size_t i = 0; i < n; i += size) std::memcpy(begin + i, element, size);
  });
}

double Tensor::item() const {
  ND_CHECK(numel_ == 1, "item() of " << str() << ", which has " << numel_ << " elements");
  return to_double_vector()[0];
}

std::vector<double> Tensor::to_double_vector() const {
  Tensor host = to(Device::cpu());
  std::vector<double> out(numel_);
  const void* p = host.raw_data();
  for (int64_t i = 0; i < numel_; ++i) out[i] = read_element(p, dtype_, i);
  return out;
}

std::vector<float> Tensor::to_float_vector() const {
  std::vector<double> d = to_double_vector();
  return std::vector<float>(d.begin(), d.end());
}

void check_shape(const Tensor& t, const Shape& shape, const char* what) {
  ND_CHECK(t.defined(), what << " is undefined");
  ND_CHECK(t.shape() == shape, what << " has shape " << shape_str(t.shape()) << ", expected " << shape_str(shape));
}

void check_same_shape(const Tensor& a, const Tensor& b, const char* what) {
  ND_CHECK(a.shape() == b.shape(),
           what << ": shapes " << shape_str(a.shape()) << " and " << shape_str(b.shape()) << " differ");
}

void check_dtype(const Tensor& t, DType dtype, const char* what) {
  ND_CHECK(t.dtype() == dtype, what << " is " << dtype_name(t.dtype()) << ", expected " << dtype_name(dtype));
}

void check_device(const Tensor& t, Device device, const char* what) {
  ND_CHECK(t.device() == device, what << " is on " << t.device().str() << ", expected " << device.str());
}

}  // namespace nd
