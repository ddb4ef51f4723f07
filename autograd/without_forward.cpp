// The WithoutForward scope (a thread-local switch, like grad mode) and the result without a value:
// an ordinary recorded result whose value is replaced by a graph edge's description of it, so that
// shape(), dtype() and device() answer and data() fails as it does through any graph edge.
#include "autograd/without_forward.h"

namespace nd {

namespace {
thread_local bool g_forward_skipped = false;
}

bool forward_skipped() { return g_forward_skipped; }

WithoutForward::WithoutForward(bool active) : previous_(g_forward_skipped) {
  if (active) g_forward_skipped = true;
}

WithoutForward::~WithoutForward() { g_forward_skipped = previous_; }

Variable make_result_without_value(const ValueInfo& info, std::vector<Variable> inputs,
                                   std::function<void(const Tensor&, std::vector<Variable>&)> backward) {
  Variable result = make_result(Tensor(), std::move(inputs), std::move(backward));
  result.impl()->edge = info;
  return result;
}

}  // namespace nd
