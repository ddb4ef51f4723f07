// Model and optimizer state in and out of CheckpointData, with shape and vocabulary checks.
#include "train/ckpt/checkpoint_model.h"

#include "dist/parallel/tensor_shard.h"
#include "tensor/error.h"

namespace nd::train {
namespace {

const Tensor* find_tensor(const NamedTensors& tensors, const std::string& name) {
  for (const auto& [key, tensor] : tensors)
    if (key == name) return &tensor;
  return nullptr;
}

Tensor host_f32_copy(const Tensor& t) {
  Tensor host = t.to(Device::cpu());
  if (host.dtype() != DType::F32) return host.to(DType::F32);
  return host.shares_storage(t) ? host.clone() : host;
}

// What the model says of parameter `name` (nn::ParamInfo).
nn::ParamInfo info_of(const nn::GPT& model, const std::string& name) {
  for (const auto& [key, info] : model.named_param_infos())
    if (key == name) return info;
  ND_FAIL("the model has no parameter " << name);
}

// The full tensor (CPU f32) of `name` from this rank's `shard`: gathered over the tp group, and
// without its padding rows (the token embedding's past vocab_size).
Tensor full_for_checkpoint(const nn::GPT& model, const dist::TensorParallel& tp, const std::string& name,
                           const Tensor& shard) {
  const nn::ParamInfo info = info_of(model, name);
  Tensor full = tp.active() ? host_f32_copy(dist::gather_full_tensor(*tp.comm, shard, info.split))
                            : host_f32_copy(shard);
  if (info.used_rows >= 0) full = full.narrow(0, info.used_rows).clone();
  return full;
}

// dst (this rank's shard, on the model's device) <- its part of the full tensor `name` in
// `tensors`; padding rows (the token embedding's past vocab_size) become zeros whatever the
// checkpoint's padding.
void copy_into(Tensor& dst, const nn::GPT& model, const dist::TensorParallel& tp, const NamedTensors& tensors,
               const std::string& name, const std::string& what, const std::string& source) {
  const Tensor* src = find_tensor(tensors, name);
  ND_CHECK(src != nullptr, source << " has no " << what << " for parameter " << name);
  const nn::ParamInfo info = info_of(model, name);
  Tensor full = *src;
  Shape want = dst.shape();  // the full tensor's shape: the shard's, times tp along a split dim
  if (tp.active() && info.split.sharded()) want[info.split.dim] *= tp.size();
  const int64_t used = info.used_rows;
  if (used >= 0 && src->ndim() == 2 && src->shape()[0] >= used && src->shape()[1] == want[1]) {
    full = Tensor::zeros(want, src->dtype(), Device::cpu());
    full.narrow(0, used).copy_from(src->narrow(0, used));
  }
  ND_CHECK(full.shape() == want, source << ": " << what << " " << name << " has shape " << shape_str(src->shape())
                                        << ", the model has " << shape_str(want));
  Tensor part = tp.active() ? nn::shard_of(full, info.split, tp.rank(), tp.size()) : full;
  Tensor converted = part.dtype() == dst.dtype() ? part : part.to(dst.dtype());
  dst.copy_from(converted);
}

}  // namespace

void store_model(const nn::GPT& model, const AdamW* optimizer, CheckpointData& data, const dist::TensorParallel& tp) {
  ND_CHECK(optimizer == nullptr || !optimizer->sharded(),
           "store_model holds whole tensors; a ZeRO optimizer's state is saved by ModelSnapshot");
  data.params.clear();
  data.m.clear();
  data.v.clear();
  for (const auto& [name, param] : model.named_parameters()) {
    // A bf16 model's f32 master weights are the parameters' true values.
    const ParamState* state = nullptr;
    if (optimizer != nullptr)
      for (const ParamState& s : optimizer->states())
        if (s.name == name) state = &s;
    const Tensor& value = state != nullptr && state->master.defined() ? state->master : param.data();
    data.params.emplace_back(name, full_for_checkpoint(model, tp, name, value));
  }
  if (optimizer == nullptr) return;
  for (const ParamState& s : optimizer->states()) {
    data.m.emplace_back(s.name, full_for_checkpoint(model, tp, s.name, s.m));
    data.v.emplace_back(s.name, full_for_checkpoint(model, tp, s.name, s.v));
  }
}

void load_model(const CheckpointData& data, const std::string& source, nn::GPT& model, AdamW* optimizer,
                const dist::TensorParallel& tp) {
  auto named = model.named_parameters();
  // A pipeline stage holds some of them (each found by name below).
  ND_CHECK(named.size() == data.params.size() || !(model.is_first_stage() && model.is_last_stage()),
           source << " holds " << data.params.size() << " parameters, the model has " << named.size());
  for (auto& [name, param] : named) copy_into(param.data(), model, tp, data.params, name, "parameter", source);
  if (optimizer == nullptr) return;
  if (optimizer->sharded()) {  // ZeRO: each rank keeps its pieces, one tensor at a time
    for (ParamState& s : optimizer->states()) {
      const NamedTensors* groups[3] = {&data.params, &data.m, &data.v};
      const char* what[3] = {"parameter", "AdamW first moment", "AdamW second moment"};
      for (int g = 0; g < 3; ++g) {
        Tensor value = Tensor::zeros(s.param.shape(), DType::F32, s.param.device());
        copy_into(value, model, tp, *groups[g], s.name, what[g], source);
        optimizer->load_owned(s.name, g, value);
      }
    }
    return;
  }
  for (ParamState& s : optimizer->states()) {
    if (s.master.defined()) copy_into(s.master, model, tp, data.params, s.name, "parameter", source);
    copy_into(s.m, model, tp, data.m, s.name, "AdamW first moment", source);
    copy_into(s.v, model, tp, data.v, s.name, "AdamW second moment", source);
  }
}

std::unique_ptr<Tokenizer> tokenizer_from_text(const std::string& text, const std::string& source) {
  ND_CHECK(!text.empty(), source << " is empty: this model was trained on token files without a nanodist tokenizer "
                                 << "(llm.c shards or nanoGPT .bin), so there is no tokenizer to turn text into ids "
                                 << "and back; train on data made by nanodist prepare to sample text");
  return Tokenizer::from_text(text, source);
}

}  // namespace nd::train
