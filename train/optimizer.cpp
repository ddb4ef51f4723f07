// AdamW bookkeeping; the arithmetic runs in the device kernels behind optimizer_dispatch.h.
#include "train/optimizer.h"

#include <cmath>

#include "train/optimizer_dispatch.h"

namespace nd::train {

bool in_decay_group(const Tensor& param) { return param.ndim() >= 2; }

double clip_scale(double norm, double grad_clip) {
  if (grad_clip <= 0.0) return 1.0;
  double coef = grad_clip / (norm + 1e-6);
  return coef < 1.0 ? coef : 1.0;
}

AdamW::AdamW(const std::vector<std::pair<std::string, Variable>>& named_params, AdamWOptions options)
    : options_(options) {
  for (const auto& [name, param] : named_params) {
    ND_CHECK(param.defined(), "AdamW: parameter " << name << " is undefined");
    for (const ParamState& s : states_) ND_CHECK(s.name != name, "AdamW: parameter " << name << " appears twice");
    const Tensor& p = param.data();
    ParamState s;
    s.name = name;
    s.param = param;
    s.m = Tensor::zeros(p.shape(), DType::F32, p.device());
    s.v = Tensor::zeros(p.shape(), DType::F32, p.device());
    if (p.dtype() != DType::F32) s.master = p.to(DType::F32);
    s.decay = in_decay_group(p);
    states_.push_back(std::move(s));
  }
}

ParamState& AdamW::state(const std::string& name) {
  for (ParamState& s : states_)
    if (s.name == name) return s;
  ND_FAIL("AdamW has no parameter " << name);
}

double AdamW::grad_norm() const { return global_grad_norm(states_, tp_); }

void AdamW::set_tensor_parallel(dist::Comm* tp, const std::vector<std::string>& sharded_names) {
  for (ParamState& s : states_) s.sharded = false;
  for (const std::string& name : sharded_names) state(name).sharded = true;
  tp_ = tp;
}

namespace {

AdamWHyper hyper_of(const AdamWOptions& options, double lr, int64_t step) {
  AdamWHyper h;
  h.lr = static_cast<float>(lr);
  h.beta1 = static_cast<float>(options.beta1);
  h.beta2 = static_cast<float>(options.beta2);
  h.eps = static_cast<float>(options.eps);
  h.weight_decay = static_cast<float>(options.weight_decay);
  h.step = step;
  return h;
}

}  // namespace

double AdamW::step(double lr, double grad_clip) {
  begin_step(lr);
  enqueue_update(grad_clip);
  return finish_step();
}

double AdamW::finish_step() {
  double norm = last_grad_norm();
  if (!std::isfinite(norm)) --step_count_;
  return norm;
}

bool AdamW::on_gpu() const { return !states_.empty() && states_.front().param.data().device().is_cuda(); }

void AdamW::begin_step(double lr) {
  ++step_count_;
  step_lr_ = lr;
  if (on_gpu()) cuda_upload_step_scalars(states_, hyper_of(options_, lr, step_count_), tp_, device_state_);
}

// The GPU kernels read lr and the step from what begin_step uploaded; they are passed again only
// for launch data built after that upload (the first step creates the gradients).
void AdamW::enqueue_update(double grad_clip) {
  AdamWHyper hyper = hyper_of(options_, step_lr_, step_count_);
  if (on_gpu()) {
    cuda_enqueue_clip_and_update(states_, hyper, grad_clip, tp_, device_state_);
  } else {
    host_grad_norm_ = clip_and_update(states_, hyper, grad_clip, tp_, device_state_);
  }
}

double AdamW::last_grad_norm() const {
  return on_gpu() ? cuda_read_grad_norm(states_, device_state_) : host_grad_norm_;
}

}  // namespace nd::train
