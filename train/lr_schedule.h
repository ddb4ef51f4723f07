// Learning rate at each optimizer step: linear warmup, then one of four shapes to min_lr at
// lr_decay_iters, then min_lr. Cosine is nanoGPT's schedule (written from its definition); WSD
// (warmup-stable-decay) holds the peak and decays linearly over the last decay_frac of the
// decay span, so a run can be continued from a checkpoint taken before its decay.
#pragma once
#include <string>

namespace nd::train {

enum class LrShape { Cosine, Linear, Wsd, Constant };
LrShape parse_lr_shape(const std::string& text);  // cosine | linear | wsd | constant; input error otherwise
const char* lr_shape_name(LrShape shape);

struct LrSchedule {
  double lr = 1e-3;        // peak, reached at the end of warmup
  double min_lr = 1e-4;    // floor, from lr_decay_iters on (constant: unused)
  int warmup_iters = 100;  // 0 = no warmup
  int lr_decay_iters = 5000;
  LrShape shape = LrShape::Cosine;
  double decay_frac = 0.2;  // wsd: the share of (lr_decay_iters - warmup_iters) spent decaying

  // Step `it` (0-based), with r = (it - warmup) / (decay - warmup) in [0, 1]:
  //   it < warmup:            lr * (it + 1) / (warmup + 1)
  //   warmup <= it <= decay:  cosine    min_lr + (lr - min_lr) * (1 + cos(pi * r)) / 2
  //                           linear    lr + (min_lr - lr) * r
  //                           wsd       lr until r = 1 - decay_frac, then linear to min_lr at r = 1
  //                           constant  lr (also after decay)
  //   it > decay:             min_lr
  // When decay <= warmup there is no decay part: min_lr follows the warmup directly.
  double at(int it) const;
};

}  // namespace nd::train
