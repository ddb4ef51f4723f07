// ops::on_backward: x itself in forward; in backward, `fn` runs when x's gradient arrives, before
// the gradient goes on to x's producer. The model marks where a unit's backward starts with it
// (dist/parallel/unit_hooks.h), so a sharded engine can gather and stage just in time.
#pragma once
#include <functional>

#include "autograd/variable.h"

namespace nd::ops {

// Without recording (grad mode off, or x needs no gradient) this is x.
Variable on_backward(const Variable& x, std::function<void()> fn);

}  // namespace nd::ops
