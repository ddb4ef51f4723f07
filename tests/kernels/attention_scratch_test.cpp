// The CPU attention's scratch is taken before its parallel region: a sequence too long for the
// host is one nd::Error naming the kernel and the size, not a std::terminate from inside an
// OpenMP region. The address space is capped for the test, so the refusal does not depend on
// how much memory the machine has.
#include <gtest/gtest.h>

#include <climits>
#include <string>
#include <vector>

#include "kernels/cpu/attention.h"
#include "tensor/error.h"
#include "tests/common/address_space_cap.h"

namespace nd::cpu {
namespace {

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.message();
  }
  return "(no error)";
}

// `size`: the scratch of one (batch, head) pair, from the layout in attention.cpp (one pair, so
// one thread, whatever OMP_NUM_THREADS says).
void expect_out_of_memory(const std::string& message, const std::string& pass, int64_t T, const std::string& size) {
  EXPECT_EQ(message, "out of host memory: attention " + pass + " (sequence length " + std::to_string(T) +
                         ": a T x T score matrix per thread) needs " + size + " of scratch");
}

TEST(AttentionScratch, TooLongForTheHostIsOneError) {
  const int64_t B = 1, T = 40000, C = 4, NH = 1;  // a 6.4 GB score matrix per thread
  std::vector<float> qkv(B * T * 3 * C, 0.5f), out(B * T * C), lse(B * NH * T), dout(B * T * C, 1.0f),
      dqkv(B * T * 3 * C);
  test::AddressSpaceCap cap(size_t(1) << 30);
  ASSERT_TRUE(cap.applied());
  // (4 T hs + T^2) floats forward, (5 T hs + 2 T^2 + T) backward, hs = 4.
  expect_out_of_memory(error_of([&] { attention_forward(qkv.data(), out.data(), lse.data(), B, T, C, NH); }),
                       "forward", T, "6.4 GB");
  expect_out_of_memory(error_of([&] {
                         attention_backward(dout.data(), qkv.data(), out.data(), lse.data(), {dqkv.data(), false}, B,
                                            T, C, NH);
                       }),
                       "backward", T, "12.8 GB");
}

// A T x T matrix past what a size_t counts is refused before any allocation is tried (nothing
// is read: the kernel stops first).
TEST(AttentionScratch, BeyondAnyMachineIsOneError) {
  const int64_t T = INT_MAX;
  float unused = 0;
  expect_out_of_memory(error_of([&] { attention_forward(&unused, &unused, &unused, 1, T, 2, 1); }), "forward", T,
                       "18446.7 PB");
}

}  // namespace
}  // namespace nd::cpu
