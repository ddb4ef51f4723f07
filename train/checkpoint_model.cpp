// Model and optimizer state in and out of CheckpointData, with shape and vocabulary checks.
#include "train/checkpoint_model.h"

#include "tensor/error.h"

namespace nd::train {
namespace {

const Tensor* find_tensor(const NamedTensors& tensors, const std::string& name) {
  for (const auto& [key, tensor] : tensors)
    if (key == name) return &tensor;
  return nullptr;
}

void copy_into(Tensor& dst, const NamedTensors& tensors, const std::string& name, const std::string& what,
               const std::string& source) {
  const Tensor* src = find_tensor(tensors, name);
  ND_CHECK(src != nullptr, source << " has no " << what << " for parameter " << name);
  ND_CHECK(src->shape() == dst.shape(), source << ": " << what << " " << name << " has shape " << shape_str(src->shape())
                                               << ", the model has " << shape_str(dst.shape()));
  Tensor converted = src->dtype() == dst.dtype() ? *src : src->to(dst.dtype());
  dst.copy_from(converted);
}

Tensor host_f32_copy(const Tensor& t) {
  Tensor host = t.to(Device::cpu());
  if (host.dtype() != DType::F32) return host.to(DType::F32);
  return host.shares_storage(t) ? host.clone() : host;
}

}  // namespace

void store_model(const nn::GPT& model, const AdamW* optimizer, CheckpointData& data) {
  data.params.clear();
  data.m.clear();
  data.v.clear();
  for (const auto& [name, param] : model.named_parameters()) data.params.emplace_back(name, host_f32_copy(param.data()));
  if (optimizer == nullptr) return;
  for (const ParamState& s : optimizer->states()) {
    // A bf16 model's f32 master weights are the parameters' true values.
    if (s.master.defined())
      for (auto& [name, t] : data.params)
        if (name == s.name) t = host_f32_copy(s.master);
    data.m.emplace_back(s.name, host_f32_copy(s.m));
    data.v.emplace_back(s.name, host_f32_copy(s.v));
  }
}

void load_model(const CheckpointData& data, const std::string& source, nn::GPT& model, AdamW* optimizer) {
  auto named = model.named_parameters();
  ND_CHECK(named.size() == data.params.size(), source << " holds " << data.params.size() << " parameters, the model has "
                                                      << named.size());
  for (auto& [name, param] : named) copy_into(param.data(), data.params, name, "parameter", source);
  if (optimizer == nullptr) return;
  for (ParamState& s : optimizer->states()) {
    if (s.master.defined()) copy_into(s.master, data.params, s.name, "parameter", source);
    copy_into(s.m, data.m, s.name, "AdamW first moment", source);
    copy_into(s.v, data.v, s.name, "AdamW second moment", source);
  }
}

std::unique_ptr<Tokenizer> tokenizer_from_text(const std::string& text, const std::string& source) {
  ND_CHECK(!text.empty(), source << " is empty: this model was trained on token files without a nanodist tokenizer "
                                 << "(llm.c shards or nanoGPT .bin), so there is no tokenizer to turn text into ids "
                                 << "and back; train on data made by nanodist prepare to sample text");
  return Tokenizer::from_text(text, source);
}

}  // namespace nd::train
