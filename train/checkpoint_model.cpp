// Model and optimizer state in and out of CheckpointData, with shape and vocabulary checks.
#include "train/checkpoint_model.h"

#include <sstream>

#include "tensor/error.h"

namespace nd::train {
namespace {

std::string underscored(std::string name) {
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
}

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

std::vector<std::pair<std::string, AttrValue>> config_attributes(const nn::GPTConfig& m, const TrainConfig& train) {
  std::vector<std::pair<std::string, AttrValue>> out = {
      {"n_layer", int64_t{m.n_layer}},
      {"n_head", int64_t{m.n_head}},
      {"n_embd", int64_t{m.n_embd}},
      {"block_size", int64_t{m.block_size}},
      {"vocab_size", int64_t{m.vocab_size}},
      {"padded_vocab_size", int64_t{m.padded_vocab_size}},
      {"bias", int64_t{m.bias}},
      {"use_layernorm", int64_t{m.use_layernorm}},
      {"use_residual", int64_t{m.use_residual}},
  };
  // The train fields follow, dropout among them (as given, not rounded to the model's float).
  for (const ConfigField& f : train_config_fields(train)) {
    std::string name = underscored(f.name);
    bool already = false;
    for (const auto& kv : out) already = already || kv.first == name;
    if (already) continue;
    switch (f.type) {
      case FlagType::Int: out.emplace_back(name, parse_int_value(f.text, name)); break;
      case FlagType::Float: out.emplace_back(name, parse_double_value(f.text, name)); break;
      case FlagType::Bool: out.emplace_back(name, int64_t{parse_bool_value(f.text, name)}); break;
      case FlagType::String: out.emplace_back(name, f.text); break;
    }
  }
  return out;
}

nn::GPTConfig model_config_from_attributes(const std::vector<std::pair<std::string, AttrValue>>& attrs,
                                           const std::string& source) {
  auto get_int = [&](const char* name) {
    return static_cast<int>(attr_as_int(find_attr(attrs, name, source), source + ": config field " + name));
  };
  nn::GPTConfig c;
  c.n_layer = get_int("n_layer");
  c.n_head = get_int("n_head");
  c.n_embd = get_int("n_embd");
  c.block_size = get_int("block_size");
  c.vocab_size = get_int("vocab_size");
  c.padded_vocab_size = get_int("padded_vocab_size");
  c.dropout = static_cast<float>(attr_as_double(find_attr(attrs, "dropout", source), source + ": dropout"));
  c.bias = get_int("bias") != 0;
  c.use_layernorm = get_int("use_layernorm") != 0;
  c.use_residual = get_int("use_residual") != 0;
  return c;
}

void check_same_model(const nn::GPTConfig& ckpt, const nn::GPTConfig& model, const std::string& source) {
  std::ostringstream diff;
  auto compare = [&](const char* name, int a, int b) {
    if (a != b) diff << (diff.tellp() > 0 ? ", " : "") << name << " " << a << " in the checkpoint vs " << b << " now";
  };
  compare("n_layer", ckpt.n_layer, model.n_layer);
  compare("n_head", ckpt.n_head, model.n_head);
  compare("n_embd", ckpt.n_embd, model.n_embd);
  compare("block_size", ckpt.block_size, model.block_size);
  compare("padded_vocab_size", ckpt.vocab_rows(), model.vocab_rows());
  compare("bias", ckpt.bias, model.bias);
  compare("use_layernorm", ckpt.use_layernorm, model.use_layernorm);
  compare("use_residual", ckpt.use_residual, model.use_residual);
  ND_CHECK(ckpt.vocab_size == model.vocab_size,
           "vocabulary mismatch: " << source << " was trained on a vocabulary of " << ckpt.vocab_size
                                   << " tokens, the data has " << model.vocab_size);
  ND_CHECK(diff.tellp() == 0, "model shape mismatch: " << source << " holds another model (" << diff.str()
                                                       << "); resume needs the same model flags");
}

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
