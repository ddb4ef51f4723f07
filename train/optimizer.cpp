// AdamW bookkeeping; the arithmetic runs in the device kernels behind optimizer_dispatch.h.
#include "train/optimizer.h"

#include <algorithm>
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
    : AdamW(std::make_shared<dist::FlatParams>(named_params,
                                               named_params.empty() ? DType::F32 : named_params.front().second.dtype()),
            options) {}

AdamW::AdamW(std::shared_ptr<dist::FlatParams> flat, AdamWOptions options, const AdamWShard* shard)
    : options_(options), flat_(std::move(flat)) {
  ND_CHECK(flat_ != nullptr, "AdamW: no parameters");
  const Device device = flat_->device();
  if (shard != nullptr) {
    ND_CHECK(!shard->grads.defined() || (shard->grads.dtype() == DType::F32 && shard->grads.numel() == shard->numel),
             "AdamW: the gradient shard must be f32 with " << shard->numel << " elements");
    sharded_ = true;
    grads_in_shard_ = shard->grads.defined();
    params_in_shard_ = shard->params.defined();
    ND_CHECK(!params_in_shard_ || (shard->params.dtype() == flat_->param_dtype() && shard->params.numel() == shard->numel),
             "AdamW: the parameter shard must be " << dtype_name(flat_->param_dtype()) << " with " << shard->numel
                                                   << " elements");
    owned_ = shard->owned;
    flat_state_.grads = grads_in_shard_ ? shard->grads : flat_->grads();
    flat_state_.shard_group = shard->group;
  }
  const int64_t n = sharded_ ? shard->numel : flat_->numel();
  flat_state_.m = Tensor::zeros({n}, DType::F32, device);
  flat_state_.v = Tensor::zeros({n}, DType::F32, device);
  if (flat_->param_dtype() != DType::F32 && options.master_weights && !sharded_) flat_state_.master = flat_->params().to(DType::F32);
  if (flat_->param_dtype() != DType::F32 && options.master_weights && sharded_) {
    flat_state_.master = Tensor::zeros({n}, DType::F32, device);
    for (const dist::ShardSlice& s : owned_)
      flat_state_.master.narrow(s.local, s.length)
          .copy_from(params_in_shard_ ? shard->params.narrow(s.local, s.length).to(DType::F32)
                                      : flat_->params().narrow(s.begin, s.length).to(DType::F32));
  }
  flat_state_.params = params_in_shard_ ? shard->params : flat_->params();
  if (!sharded_) flat_state_.grads = flat_->grads();
  const std::vector<dist::FlatEntry>& entries = flat_->entries();
  // The states in registration order (the layout is its reverse), as checkpoints list them.
  for (size_t k = entries.size(); k-- > 0;) {
    const dist::FlatEntry& e = entries[k];
    ParamState s;
    s.name = e.name;
    s.param = e.param;
    s.entry = k;
    if (!sharded_) {
      s.m = flat_->view_of(flat_state_.m, e);
      s.v = flat_->view_of(flat_state_.v, e);
      if (flat_state_.master.defined()) s.master = flat_->view_of(flat_state_.master, e);
    }
    const auto decay = options.decay.find(e.name);
    ND_CHECK(options.decay.empty() || decay != options.decay.end(), "AdamW: no weight-decay choice for " << e.name);
    s.decay = options.decay.empty() ? in_decay_group(e.param.data()) : decay->second;
    states_.push_back(std::move(s));
  }
}

std::vector<dist::ShardSlice> AdamW::owned_of(const std::string& name) const {
  const dist::FlatEntry& e = flat_->entries().at(const_cast<AdamW*>(this)->state(name).entry);
  if (!sharded_) return {dist::ShardSlice{0, e.numel, e.offset}};
  std::vector<dist::ShardSlice> pieces;
  for (const dist::ShardSlice& s : owned_) {
    const int64_t begin = std::max(e.offset, s.begin), end = std::min(e.offset + e.numel, s.begin + s.length);
    if (begin < end) pieces.push_back(dist::ShardSlice{begin - e.offset, end - begin, s.local + (begin - s.begin)});
  }
  return pieces;
}

void AdamW::load_owned(const std::string& name, int group, const Tensor& value) {
  ND_CHECK(group >= 0 && group <= 2, "AdamW::load_owned: group " << group);
  Tensor& dst = group == 0 ? flat_state_.master : group == 1 ? flat_state_.m : flat_state_.v;
  if (!dst.defined() && !(group == 0 && params_in_shard_)) return;  // no masters beside f32 parameters
  const ParamState& s = state(name);
  ND_CHECK(value.numel() == s.param.data().numel(), "AdamW::load_owned: " << name << " has " << s.param.data().numel()
                                                                          << " elements, the value " << value.numel());
  Tensor flat = value.view({-1});
  if (group == 0 && params_in_shard_) {  // ZeRO 3: the parameters themselves live in the shard
    Tensor same_dtype = flat.dtype() == flat_->param_dtype() ? flat : flat.to(flat_->param_dtype());
    for (const dist::ShardSlice& p : owned_of(name))
      flat_state_.params.narrow(p.local, p.length).copy_from(same_dtype.narrow(p.begin, p.length));
  }
  if (flat.dtype() != DType::F32) flat = flat.to(DType::F32);
  if (!dst.defined()) return;
  for (const dist::ShardSlice& p : owned_of(name)) dst.narrow(p.local, p.length).copy_from(flat.narrow(p.begin, p.length));
}

int64_t AdamW::state_bytes() const {
  int64_t bytes = 0;
  for (const Tensor* t : {&flat_state_.m, &flat_state_.v, &flat_state_.master})
    if (t->defined()) bytes += t->numel() * static_cast<int64_t>(dtype_size(t->dtype()));
  return bytes;
}

std::vector<FlatRun> AdamW::runs() const {
  std::vector<FlatRun> runs;
  const std::vector<dist::FlatEntry>& entries = flat_->entries();
  if (sharded_) {
    // Every owned element: the data-parallel engine leaves a gradient (zeros where none came) for all.
    for (const dist::ShardSlice& slice : owned_) {
      bool open = false;
      for (size_t k = 0; k < entries.size(); ++k) {
        const dist::FlatEntry& e = entries[k];
        const int64_t begin = std::max(e.offset, slice.begin);
        const int64_t end = std::min(e.offset + e.numel, slice.begin + slice.length);
        if (begin >= end) continue;
        const ParamState& s = states_[entries.size() - 1 - k];
        if (open && runs.back().decay == s.decay && runs.back().sharded == s.sharded &&
            runs.back().in_norm == s.in_norm) {
          runs.back().length = end - runs.back().begin;  // the padding between is zero
        } else {
          const int64_t local = slice.local + (begin - slice.begin);
          runs.push_back(
              FlatRun{begin, end - begin, s.decay, s.sharded, local, grads_in_shard_ ? local : begin, s.in_norm});
        }
        open = true;
      }
    }
    // A shard of padding only still joins the norm's sum over the group (an empty run).
    if (runs.empty() && !owned_.empty())
      runs.push_back(FlatRun{owned_[0].begin, 0, false, false, owned_[0].local,
                             grads_in_shard_ ? owned_[0].local : owned_[0].begin});
    for (FlatRun& r : runs) r.param = params_in_shard_ ? r.local : r.begin;
    return runs;
  }
  bool open = false;  // the last run may be extended (its last tensor was the previous entry)
  for (size_t k = 0; k < entries.size(); ++k) {
    if (!flat_->has_gradient(k)) {
      open = false;
      continue;
    }
    const ParamState& s = states_[entries.size() - 1 - k];  // registration order: the layout reversed
    const dist::FlatEntry& e = entries[k];
    ND_CHECK(flat_->separate_grads() || e.param.grad().raw_data() == static_cast<char*>(flat_->grads().raw_data()) +
                                                                         e.offset * dtype_size(flat_->grad_dtype()),
             "AdamW: the gradient of " << e.name << " was replaced (set_grad) by a tensor outside the flat buffer; "
                                       << "write into its buffer (grad_slot) instead");
    if (open && runs.back().decay == s.decay && runs.back().sharded == s.sharded && runs.back().in_norm == s.in_norm) {
      runs.back().length = e.offset + e.numel - runs.back().begin;  // the padding between is zero
    } else {
      runs.push_back(FlatRun{e.offset, e.numel, s.decay, s.sharded, e.offset, e.offset, s.in_norm, e.offset});
    }
    open = true;
  }
  return runs;
}

ParamState& AdamW::state(const std::string& name) {
  for (ParamState& s : states_)
    if (s.name == name) return s;
  ND_FAIL("AdamW has no parameter " << name);
}

double AdamW::grad_norm() const { return global_grad_norm(*flat_, flat_state_, runs(), tp_); }

void AdamW::set_tensor_parallel(dist::Comm* tp, const std::vector<std::string>& sharded_names,
                                const std::vector<std::string>& not_in_norm) {
  for (ParamState& s : states_) s.sharded = false, s.in_norm = true;
  for (const std::string& name : sharded_names) state(name).sharded = true;
  for (const std::string& name : not_in_norm) state(name).in_norm = false;
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

bool AdamW::on_gpu() const { return flat_->device().is_cuda(); }

void AdamW::begin_step(double lr) {
  ++step_count_;
  step_lr_ = lr;
  if (on_gpu()) cuda_upload_step_scalars(*flat_, flat_state_, runs(), hyper_of(options_, lr, step_count_), tp_, device_state_);
}

// The GPU kernels read lr and the step from what begin_step uploaded; they are passed again only
// for launch data built after that upload (the first step creates the gradients).
void AdamW::enqueue_update(double grad_clip) {
  AdamWHyper hyper = hyper_of(options_, step_lr_, step_count_);
  if (on_gpu()) {
    cuda_enqueue_clip_and_update(*flat_, flat_state_, runs(), hyper, grad_clip, tp_, device_state_);
  } else {
    host_grad_norm_ = clip_and_update(*flat_, flat_state_, runs(), hyper, grad_clip, tp_);
  }
}

double AdamW::last_grad_norm() const {
  return on_gpu() ? cuda_read_grad_norm(device_state_, flat_->device()) : host_grad_norm_;
}

}  // namespace nd::train
