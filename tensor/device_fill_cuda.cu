// The element-wise services Tensor needs on a GPU without a round trip through the host: filling
// with one value and converting between floating dtypes. Stream-ordered on the compute stream, as
// device_memset_zero is, so parameters and optimizer state are made where they live.
#include "tensor/cuda_check.h"
#include "tensor/cuda_stream.h"
#include "tensor/storage.h"

namespace nd {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = int64_t{1} << 20;  // grid-stride beyond this

unsigned blocks_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

template <typename Word>
__global__ void fill_kernel(Word* out, Word value, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = value;
}

template <typename Word>
void launch_fill(void* ptr, const void* value, int64_t n, cudaStream_t stream) {
  Word word;
  memcpy(&word, value, sizeof(Word));
  fill_kernel<Word><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<Word*>(ptr), word, n);
  CUDA_CHECK(cudaGetLastError());
}

// The host's conversions (tensor.cpp read_element / write_element): through double, bf16 rounded
// and f16 rounded from f32 to nearest even.
__device__ __forceinline__ double to_double(float x) { return x; }
__device__ __forceinline__ double to_double(double x) { return x; }
__device__ __forceinline__ double to_double(bf16 x) { return bf16_to_f32(x); }
__device__ __forceinline__ double to_double(f16 x) { return f16_to_f32(x); }
template <typename T>
__device__ __forceinline__ T from_double(double x);
template <>
__device__ __forceinline__ float from_double<float>(double x) { return static_cast<float>(x); }
template <>
__device__ __forceinline__ double from_double<double>(double x) { return x; }
template <>
__device__ __forceinline__ bf16 from_double<bf16>(double x) { return f32_to_bf16(static_cast<float>(x)); }
template <>
__device__ __forceinline__ f16 from_double<f16>(double x) { return f32_to_f16(static_cast<float>(x)); }

template <typename Src, typename Dst>
__global__ void convert_kernel(Dst* dst, const Src* src, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    dst[i] = from_double<Dst>(to_double(src[i]));
}

template <typename Src>
void launch_convert(void* dst, DType dst_dtype, const void* src, int64_t n, cudaStream_t stream) {
  const Src* s = static_cast<const Src*>(src);
  switch (dst_dtype) {
    case DType::F32: convert_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<float*>(dst), s, n); break;
    case DType::F64: convert_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<double*>(dst), s, n); break;
    case DType::BF16: convert_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<bf16*>(dst), s, n); break;
    case DType::F16: convert_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<f16*>(dst), s, n); break;
    default: ND_FAIL("device_convert: no conversion to " << dtype_name(dst_dtype) << " on a GPU");
  }
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void device_fill(void* ptr, const void* value, size_t elem_size, int64_t n, int device) {
  ND_CHECK(n >= 0 && (n == 0 || (ptr && value)), "device_fill: bad arguments (n = " << n << ")");
  if (n == 0) return;
  cudaStream_t stream = compute_stream(device);
  switch (elem_size) {
    case 1: launch_fill<uint8_t>(ptr, value, n, stream); break;
    case 2: launch_fill<uint16_t>(ptr, value, n, stream); break;
    case 4: launch_fill<uint32_t>(ptr, value, n, stream); break;
    case 8: launch_fill<uint64_t>(ptr, value, n, stream); break;
    default: ND_FAIL("device_fill: elements of " << elem_size << " bytes");
  }
}

bool device_can_convert(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F64 || dtype == DType::BF16 || dtype == DType::F16;
}

void device_convert(void* dst, DType dst_dtype, const void* src, DType src_dtype, int64_t n, int device) {
  ND_CHECK(device_can_convert(dst_dtype) && device_can_convert(src_dtype),
           "device_convert: no conversion from " << dtype_name(src_dtype) << " to " << dtype_name(dst_dtype)
                                                 << " on a GPU");
  ND_CHECK(n >= 0 && (n == 0 || (dst && src)), "device_convert: bad arguments (n = " << n << ")");
  if (n == 0) return;
  cudaStream_t stream = compute_stream(device);
  switch (src_dtype) {
    case DType::F32: launch_convert<float>(dst, dst_dtype, src, n, stream); break;
    case DType::F64: launch_convert<double>(dst, dst_dtype, src, n, stream); break;
    case DType::BF16: launch_convert<bf16>(dst, dst_dtype, src, n, stream); break;
    case DType::F16: launch_convert<f16>(dst, dst_dtype, src, n, stream); break;
    default: break;  // excluded above
  }
}

}  // namespace nd
