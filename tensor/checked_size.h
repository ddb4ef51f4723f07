// Sizes, counts and offsets computed from numbers a file holds. A hostile file can make a product
// wrap (4 x (2^62 + 192) is 768 in 64 bits) and so pass a size check it should fail; every such
// product or sum goes through these, which refuse negative operands and results past int64.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/error.h"

namespace nd {

// a * b; nd::Error (input) naming `what` when an operand is negative or the product overflows.
inline int64_t checked_mul(int64_t a, int64_t b, const std::string& what) {
  ND_CHECK_INPUT(a >= 0 && b >= 0, what << ": negative size (" << a << " x " << b << ")");
  int64_t out = 0;
  ND_CHECK_INPUT(!__builtin_mul_overflow(a, b, &out), what << ": " << a << " x " << b << " overflows a 64-bit size");
  return out;
}

// a + b, with the same checks.
inline int64_t checked_add(int64_t a, int64_t b, const std::string& what) {
  ND_CHECK_INPUT(a >= 0 && b >= 0, what << ": negative size (" << a << " + " << b << ")");
  int64_t out = 0;
  ND_CHECK_INPUT(!__builtin_add_overflow(a, b, &out), what << ": " << a << " + " << b << " overflows a 64-bit size");
  return out;
}

// The element count of a shape read from a file: the checked product of its dimensions.
inline int64_t checked_numel(const std::vector<int64_t>& dims, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : dims) n = checked_mul(n, d, what);
  return n;
}

}  // namespace nd
