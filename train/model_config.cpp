// The one mapping between a TrainConfig and the model it trains: the GPTConfig for a vocabulary
// (with the padding rule), the /config attributes a checkpoint records, the model read back
// from them, and the check that a checkpoint holds the same model.
#include "train/model_config.h"

#include <climits>
#include <map>
#include <sstream>
#include <string>

#include "kernels/cudnn/attention_cudnn.h"
#include "tensor/error.h"

namespace nd::train {
namespace {

std::string underscored(std::string name) {
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
}

}  // namespace

nn::GPTConfig model_config_for(const TrainConfig& c, int64_t vocab_size) {
  nn::GPTConfig m;
  m.n_layer = c.model.n_layer;
  m.n_head = c.model.n_head;
  m.n_embd = c.model.n_embd;
  m.block_size = c.model.block_size;
  m.vocab_size = static_cast<int>(vocab_size);
  // On the GPU the logits' last dimension is padded to a multiple of 128 x tp (50257 -> 50304 at
  // tp 1) so the output GEMM and the cross-entropy rows stay aligned, and under tp every rank holds
  // an equal block of rows; padding is never predicted. The CPU at tp 1 keeps the vocabulary.
  const bool on_cuda = c.parallel.device.is_cuda();
  if (on_cuda || c.parallel.tp > 1)
    m.padded_vocab_size = nn::padded_vocab_rows(static_cast<int>(vocab_size), c.parallel.tp, on_cuda);
  m.dropout = static_cast<float>(c.model.dropout);
  m.bias = c.model.bias;
  m.use_layernorm = !c.model.no_layernorm;
  m.use_residual = !c.model.no_residual;
  m.attention = attention_kernel_for(c);
  m.recompute = c.model.recompute;
  return m;
}

ops::AttentionKernel attention_kernel_for(const TrainConfig& c) {
  if (c.model.attention == AttentionBackend::Ours) return ops::AttentionKernel::Ours;
  const int head_size = c.model.n_head > 0 ? c.model.n_embd / c.model.n_head : 0;
  std::string why;
  if (!c.parallel.device.is_cuda())
    why = "cuDNN attention runs on the GPU, and --device is " + c.parallel.device.str();
  else if (c.precision.dtype != DType::BF16 && c.precision.dtype != DType::F16)
    why = "cuDNN attention takes bf16 or fp16, and --dtype is " + std::string(dtype_flag_name(c.precision.dtype));
  else if (c.model.n_head <= 0 || c.model.n_embd % c.model.n_head != 0 || head_size % 8 != 0 || head_size > 128)
    why = "cuDNN attention takes head sizes that are multiples of 8 up to 128, and n_embd / n_head is " +
          (c.model.n_head > 0 ? std::to_string(head_size) : std::string("undefined"));
  else if (c.model.attention == AttentionBackend::Auto && c.parallel.tp > 1 && c.model.dropout > 0.0)
    // cuDNN draws its own masks: under tp a head would not drop what it drops at tp = 1.
    why = "with dropout under --tp, each head keeps its tp = 1 mask only with our kernel";
  else if (cudnn::attention_available(&why))
    return ops::AttentionKernel::Cudnn;
  ND_CHECK_INPUT(c.model.attention == AttentionBackend::Auto, "--attention cudnn: " << why);
  return ops::AttentionKernel::Ours;
}

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
    const int64_t v = attr_as_int(find_attr(attrs, name, source), source + ": config field " + name);
    ND_CHECK_INPUT(v >= 0 && v <= INT32_MAX,
                   source << ": config field " << name << " is " << v << ", outside [0, " << INT32_MAX << "]");
    return static_cast<int>(v);
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

void check_weights_hold_model(const nn::GPTConfig& model, const std::map<std::string, Shape>& weights,
                              const std::string& source) {
  const int64_t width = model.n_embd;
  auto expect = [&](const std::string& name, int64_t rows, bool at_least) {
    auto it = weights.find(name);
    const bool ok = it != weights.end() && it->second.size() == 2 && it->second[1] == width &&
                    (at_least ? it->second[0] >= rows : it->second[0] == rows);
    ND_CHECK_INPUT(ok, source << ": its config describes a model of " << model.n_layer << " layers of width " << width
                              << ", but its weights have no " << name << " of shape (" << (at_least ? ">= " : "")
                              << rows << ", " << width << ")"
                              << (it == weights.end() ? std::string() : ", it is " + shape_str(it->second)));
  };
  expect("transformer.wte.weight", model.vocab_size, true);
  expect("transformer.wpe.weight", model.block_size, true);
  for (int layer = 0; layer < model.n_layer; ++layer)
    expect("transformer.h." + std::to_string(layer) + ".attn.c_proj.weight", width, false);
}

nn::GPTConfig model_config_from_checkpoint(const CheckpointData& data, const std::string& source) {
  nn::GPTConfig model = model_config_from_attributes(data.config, source);
  std::map<std::string, Shape> weights;
  for (const auto& [name, tensor] : data.params) weights[name] = tensor.shape();
  check_weights_hold_model(model, weights, source);
  return model;
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
  compare("bias", ckpt.bias, model.bias);
  compare("use_layernorm", ckpt.use_layernorm, model.use_layernorm);
  compare("use_residual", ckpt.use_residual, model.use_residual);
  ND_CHECK_INPUT(ckpt.vocab_size == model.vocab_size,
           "vocabulary mismatch: " << source << " was trained on a vocabulary of " << ckpt.vocab_size
                                   << " tokens, the data has " << model.vocab_size);
  ND_CHECK_INPUT(diff.tellp() == 0, "model shape mismatch: " << source << " holds another model (" << diff.str()
                                                       << "); resume needs the same model flags");
}

}  // namespace nd::train
