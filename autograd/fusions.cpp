// NANODIST_FUSIONS, read in this one place.
#include "autograd/fusions.h"

#include <cstdlib>
#include <sstream>

#include "tensor/error.h"

namespace nd {

namespace {

Fusions& current() {
  static Fusions f = [] {
    const char* text = std::getenv("NANODIST_FUSIONS");
    return parse_fusions(text ? text : "");
  }();
  return f;
}

}  // namespace

Fusions parse_fusions(const std::string& text) {
  if (text.empty() || text == "all") return Fusions{};
  Fusions off;
  off.gelu_mlp = off.fp8_gelu_mlp = off.residual_grad = off.cross_entropy_grad = off.recompute_tail = false;
  if (text == "none") return off;
  std::stringstream list(text);
  std::string name;
  while (std::getline(list, name, ',')) {
    if (name == "gelu_mlp") {
      off.gelu_mlp = true;
    } else if (name == "fp8_gelu_mlp") {
      off.fp8_gelu_mlp = true;
    } else if (name == "residual_grad") {
      off.residual_grad = true;
    } else if (name == "cross_entropy_grad") {
      off.cross_entropy_grad = true;
    } else if (name == "recompute_tail") {
      off.recompute_tail = true;
    } else {
      ND_FAIL_INPUT("NANODIST_FUSIONS: unknown fusion '"
                    << name
                    << "' (known: gelu_mlp, fp8_gelu_mlp, residual_grad, cross_entropy_grad, recompute_tail; or all, "
                       "none)");
    }
  }
  return off;
}

const Fusions& fusions() { return current(); }

ScopedFusions::ScopedFusions(const Fusions& f) : previous_(current()) { current() = f; }

ScopedFusions::~ScopedFusions() { current() = previous_; }

}  // namespace nd
