// The hyperparameters of one AdamW step: one definition for the optimizer (train/) and the CUDA
// fused update (kernels/cuda/adamw.h).
#pragma once
#include <cstdint>

namespace nd {

struct AdamWHyper {
  float lr = 0.0f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  // The decay group's rate; each tensor applies it or 0 (on the GPU it is copied into each
  // AdamWSlot when the slots are built, and the update reads the slot's).
  float weight_decay = 0.0f;
  int64_t step = 1;  // 1 for the first update (bias correction)
};

}  // namespace nd
