// Calls a model makes around each of its blocks, for whoever must act on a block's parameters just
// before they are read or their gradients written (a sharded data-parallel engine stages a block's
// gradients and gathers its parameters there: dist::fully_shard).
#pragma once

namespace nd::nn {

class BlockHooks {
 public:
  virtual ~BlockHooks() = default;
  // Around the block's forward (also without gradients: evaluation). `block` is its global index.
  virtual void before_forward(int block) = 0;
  virtual void after_forward(int block) = 0;
  // From backward, when the gradient of the block's output arrives: before any of the block's ops
  // (a recomputed block's rerun included) runs its backward.
  virtual void before_backward(int block) = 0;
};

}  // namespace nd::nn
