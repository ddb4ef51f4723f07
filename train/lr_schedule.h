// Learning rate at each optimizer step: linear warmup, cosine decay to min_lr, then min_lr
// (the schedule of nanoGPT's train.py, written from its definition).
#pragma once

namespace nd::train {

struct LrSchedule {
  double lr = 1e-3;        // peak, reached at the end of warmup
  double min_lr = 1e-4;    // floor, from lr_decay_iters on
  int warmup_iters = 100;  // 0 = no warmup
  int lr_decay_iters = 5000;

  // Step `it` (0-based):
  //   it < warmup:               lr * (it + 1) / (warmup + 1)
  //   warmup <= it <= decay:     min_lr + (lr - min_lr) * (1 + cos(pi * r)) / 2, r = (it - warmup) / (decay - warmup)
  //   it > decay:                min_lr
  // When decay <= warmup there is no cosine part: min_lr follows the warmup directly.
  double at(int it) const;
};

}  // namespace nd::train
