// Pattern fill and check for the comm bench, on the host in parallel (buffers up to GBs).
#include "dist/comm/bench/comm_bench_data.h"

namespace nd::dist::bench {

namespace {

// Threads only pay off for large buffers (and spin-waiting threads hurt oversubscribed ranks).
constexpr int64_t kParallelFrom = int64_t{1} << 22;

// A 3-bit hash of the index, so a misplaced chunk shows up as wrong values.
inline int64_t hash3(int64_t i) {
  uint64_t x = static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull;
  return static_cast<int64_t>(x >> 61);
}

float expected_at(Expect expect, int rank, int nranks, int64_t i, int64_t block) {
  switch (expect) {
    case Expect::OwnPattern: return pattern(rank, i);
    case Expect::RankSum: return pattern_sum(nranks, i);
    case Expect::BlockOwner: return pattern(static_cast<int>(i / block), i);
    case Expect::Transposed: return pattern(static_cast<int>(i / block), rank * block + i % block);
  }
  return 0;
}

}  // namespace

float pattern(int rank, int64_t i) { return static_cast<float>(rank + 1 + hash3(i)); }

float pattern_sum(int nranks, int64_t i) {
  return static_cast<float>(int64_t{nranks} * (nranks + 1) / 2 + nranks * hash3(i));
}

void fill_pattern(Tensor& buffer, int rank, int64_t first) {
  Tensor host = Tensor::empty(buffer.shape(), buffer.dtype(), Device::cpu());
  const int64_t n = host.numel();
  if (host.dtype() == DType::F32) {
    float* p = host.data<float>();
#pragma omp parallel for schedule(static) if (n >= kParallelFrom)
    for (int64_t i = 0; i < n; ++i) p[i] = pattern(rank, first + i);
  } else {
    bf16* p = host.data<bf16>();
#pragma omp parallel for schedule(static) if (n >= kParallelFrom)
    for (int64_t i = 0; i < n; ++i) p[i] = f32_to_bf16(pattern(rank, first + i));
  }
  buffer.copy_from(host);
}

int64_t count_wrong(const Tensor& buffer, Expect expect, int rank, int nranks, int64_t first, int64_t block) {
  Tensor host = buffer.to(Device::cpu());
  const int64_t n = host.numel();
  int64_t wrong = 0;
  if (host.dtype() == DType::F32) {
    const float* p = host.data<float>();
#pragma omp parallel for schedule(static) if (n >= kParallelFrom) reduction(+ : wrong)
    for (int64_t i = 0; i < n; ++i) wrong += p[i] != expected_at(expect, rank, nranks, first + i, block);
  } else {
    const bf16* p = host.data<bf16>();
#pragma omp parallel for schedule(static) if (n >= kParallelFrom) reduction(+ : wrong)
    for (int64_t i = 0; i < n; ++i) wrong += bf16_to_f32(p[i]) != expected_at(expect, rank, nranks, first + i, block);
  }
  return wrong;
}

}  // namespace nd::dist::bench
