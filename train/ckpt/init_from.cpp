// Reading --init-from sources and loading them into a fresh run (init_from.h). Hugging Face
// GPT-2 keeps its linear weights as Conv1D (in, out); nanodist's Linear as (out, in): those four
// per block are transposed on the way in. lm_head is tied to wte on both sides.
#include "train/ckpt/init_from.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "data/atomic_file.h"
#include "data/gpt2_tokenizer.h"
#include "tensor/error.h"
#include "train/ckpt/checkpoint_model.h"
#include "data/json_value.h"
#include "train/model_config.h"
#include "train/ckpt/safetensors.h"

namespace nd::train {
namespace {

namespace fs = std::filesystem;

constexpr const char* kExportedTokenizer = "nanodist_tokenizer.txt";  // written by scripts/export_hf.py

std::string in_dir(const std::string& dir, const std::string& name) { return (fs::path(dir) / name).string(); }

int json_int(const JsonValue& config, const std::string& key, const std::string& source) {
  const JsonValue* v = config.find(key);
  ND_CHECK_INPUT(v != nullptr && v->kind != JsonValue::Kind::Null, source << " has no \"" << key << "\"");
  const int64_t n = v->as_int(source + " \"" + key + "\"");
  ND_CHECK_INPUT(n >= 0 && n <= INT32_MAX, source << " \"" << key << "\" is out of range: " << n);
  return static_cast<int>(n);
}

std::string json_string(const JsonValue& config, const std::string& key, const std::string& fallback) {
  const JsonValue* v = config.find(key);
  return v != nullptr && v->kind == JsonValue::Kind::String ? v->text : fallback;
}

// config.json of a GPT-2 -> the model nanodist builds; anything nanodist's GPT computes otherwise
// is refused, naming the key.
nn::GPTConfig gpt2_model_config(const std::string& dir) {
  const std::string path = in_dir(dir, "config.json");
  const JsonValue config = parse_json(read_whole_file(path), path);
  ND_CHECK_INPUT(config.kind == JsonValue::Kind::Object, path << " is no JSON object");
  const std::string type = json_string(config, "model_type", "");
  ND_CHECK_INPUT(type == "gpt2", path << " describes a '" << type
                                      << "' model; --init-from reads GPT-2 (model_type \"gpt2\") models");
  const std::string activation = json_string(config, "activation_function", "gelu_new");
  ND_CHECK_INPUT(activation == "gelu_new" || activation == "gelu_pytorch_tanh",
                 path << ": activation_function \"" << activation << "\"; nanodist's GELU is the tanh one (gelu_new)");
  const JsonValue* eps = config.find("layer_norm_epsilon");
  ND_CHECK_INPUT(eps == nullptr || std::fabs(eps->as_double(path + " layer_norm_epsilon") - 1e-5) < 1e-12,
                 path << ": layer_norm_epsilon " << eps->text << "; nanodist's LayerNorm uses 1e-5");
  const JsonValue* tied = config.find("tie_word_embeddings");
  ND_CHECK_INPUT(tied == nullptr || tied->kind != JsonValue::Kind::Bool || tied->boolean,
                 path << ": tie_word_embeddings false; nanodist's head is the token embedding");
  const JsonValue* by_layer = config.find("scale_attn_by_inverse_layer_idx");
  ND_CHECK_INPUT(by_layer == nullptr || by_layer->kind != JsonValue::Kind::Bool || !by_layer->boolean,
                 path << ": scale_attn_by_inverse_layer_idx true is not how nanodist's attention scales");
  nn::GPTConfig m;
  m.n_layer = json_int(config, "n_layer", path);
  m.n_head = json_int(config, "n_head", path);
  m.n_embd = json_int(config, "n_embd", path);
  m.block_size = json_int(config, config.find("n_positions") ? "n_positions" : "n_ctx", path);
  m.vocab_size = json_int(config, "vocab_size", path);
  const int64_t wide = 4 * static_cast<int64_t>(m.n_embd);  // n_inner null or absent: 4 x n_embd
  const JsonValue* inner = config.find("n_inner");
  const int64_t n_inner = inner == nullptr || inner->kind == JsonValue::Kind::Null ? wide : json_int(config, "n_inner", path);
  ND_CHECK_INPUT(n_inner == wide, path << ": n_inner " << n_inner << "; nanodist's MLP is 4 x n_embd wide");
  m.bias = true;  // GPT-2 always has biases
  return m;
}

// (in, out) -> (out, in), a new CPU f32 tensor.
Tensor transposed(const Tensor& t) {
  const int64_t rows = t.shape()[0], cols = t.shape()[1];
  Tensor out = Tensor::empty({cols, rows}, DType::F32, Device::cpu());
  const float* in = t.data<float>();
  float* o = out.data<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) o[c * rows + r] = in[r * cols + c];
  return out;
}

bool is_conv1d_weight(const std::string& name) {
  for (const char* suffix : {".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight", ".mlp.c_proj.weight"}) {
    const std::string s(suffix);
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) return true;
  }
  return false;
}

// A tensor of model.safetensors under nanodist's name, or "" for those nanodist has no use for:
// the causal-mask buffers older exports keep, and the head tied to wte.
std::string nanodist_name(const std::string& stored) {
  const std::string name = stored.rfind("transformer.", 0) == 0 ? stored.substr(12) : stored;
  const bool mask = name.size() > 10 && (name.compare(name.size() - 10, 10, ".attn.bias") == 0 ||
                                         name.find(".attn.masked_bias") != std::string::npos);
  return mask || name == "lm_head.weight" ? "" : "transformer." + name;
}

// The shapes model.safetensors's header gives its tensors, as nanodist will hold them: read
// before the model is built, so a config.json claiming more than the weights is refused first.
std::map<std::string, Shape> gpt2_parameter_shapes(const std::string& dir) {
  std::map<std::string, Shape> out;
  for (const SafetensorsEntry& e : read_safetensors_header(in_dir(dir, "model.safetensors"))) {
    const std::string name = nanodist_name(e.name);
    if (name.empty()) continue;
    Shape shape = e.shape;
    if (is_conv1d_weight(name)) std::reverse(shape.begin(), shape.end());
    out[name] = shape;
  }
  return out;
}

// model.safetensors under nanodist's names.
NamedTensors gpt2_parameters(const std::string& dir) {
  const std::string path = in_dir(dir, "model.safetensors");
  NamedTensors out;
  for (auto& [stored, tensor] : read_safetensors(path)) {
    const std::string name = nanodist_name(stored);
    if (name.empty()) continue;
    if (is_conv1d_weight(name)) {
      ND_CHECK_INPUT(tensor.ndim() == 2, path << ": " << stored << " is no matrix");
      tensor = transposed(tensor);
    }
    out.emplace_back(name, tensor);
  }
  return out;
}

Tensor* find_named(NamedTensors& tensors, const std::string& name) {
  for (auto& [key, t] : tensors)
    if (key == name) return &t;
  return nullptr;
}

}  // namespace

bool is_hugging_face_dir(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::exists(in_dir(path, "config.json"), ec) &&
         fs::exists(in_dir(path, "model.safetensors"), ec);
}

InitSource describe_init_source(const std::string& path) {
  std::error_code ec;
  ND_CHECK_INPUT(fs::exists(path, ec), "--init-from " << path << " does not exist (a nanodist checkpoint or run "
                                                      << "directory, or a Hugging Face GPT-2 directory)");
  InitSource s;
  if (is_hugging_face_dir(path)) {
    s.path = path;
    s.hugging_face = true;
    s.model = gpt2_model_config(path);
    check_weights_hold_model(s.model, gpt2_parameter_shapes(path), in_dir(path, "config.json"));
    if (fs::exists(in_dir(path, kExportedTokenizer), ec))
      s.tokenizer_text = read_whole_file(in_dir(path, kExportedTokenizer));
    else if (has_hugging_face_tokenizer(path))
      s.tokenizer_text = gpt2_tokenizer_text_from_dir(path);  // GPT-2's own BPE
    return s;
  }
  ND_CHECK_INPUT(!fs::is_directory(path, ec) || !list_checkpoints(path).empty() || fs::exists(in_dir(path, "config.json")),
                 "--init-from " << path << " holds neither nanodist checkpoints (ckpt_*.h5) nor a Hugging Face model "
                                << "(config.json + model.safetensors)");
  ND_CHECK_INPUT(!fs::is_directory(path, ec) || !fs::exists(in_dir(path, "config.json")),
                 "--init-from " << path << " has a config.json but no model.safetensors (PyTorch .bin weights: save "
                                << "them with safetensors, e.g. model.save_pretrained(dir, safe_serialization=True))");
  s.path = resolve_checkpoint(path);
  const CheckpointData data = read_checkpoint(s.path);
  s.model = model_config_from_checkpoint(data, s.path);
  s.model.padded_vocab_size = 0;
  s.tokenizer_text = data.tokenizer_text;
  return s;
}

void take_model_shape(TrainConfig& c, const InitSource& source, const std::function<bool(const std::string&)>& given) {
  const nn::GPTConfig& m = source.model;
  auto take = [&](const char* flag, auto& field, auto value) {
    if (!given(flag)) {
      field = value;
      return;
    }
    ND_CHECK_INPUT(field == value, "--" << flag << " " << field << " but --init-from " << source.path << " has "
                                        << value << "; drop --" << flag << " (the model's shape comes from --init-from)");
  };
  take("n-layer", c.model.n_layer, m.n_layer);
  take("n-head", c.model.n_head, m.n_head);
  take("n-embd", c.model.n_embd, m.n_embd);
  take("bias", c.model.bias, m.bias);
  take("no-layernorm", c.model.no_layernorm, !m.use_layernorm);
  take("no-residual", c.model.no_residual, !m.use_residual);
  if (!given("block-size")) c.model.block_size = m.block_size;
  ND_CHECK_INPUT(c.model.block_size <= m.block_size, "--block-size " << c.model.block_size << " but --init-from "
                                                                     << source.path << " has positions for "
                                                                     << m.block_size << " tokens; at most that many");
}

CheckpointData initial_weights(const InitSource& source, int block_size) {
  CheckpointData data;
  if (source.hugging_face) {
    data.params = gpt2_parameters(source.path);
  } else {
    data.params = read_checkpoint(source.path).params;
  }
  Tensor* wpe = find_named(data.params, "transformer.wpe.weight");
  ND_CHECK_INPUT(wpe != nullptr && wpe->ndim() == 2, source.path << " has no position embedding wpe");
  ND_CHECK_INPUT(wpe->shape()[0] >= block_size, source.path << " has positions for " << wpe->shape()[0]
                                                            << " tokens, the run wants " << block_size);
  if (wpe->shape()[0] > block_size) *wpe = wpe->narrow(0, block_size).clone();
  for (const auto& [name, t] : data.params) {
    data.m.emplace_back(name, Tensor::zeros(t.shape(), DType::F32, Device::cpu()));
    data.v.emplace_back(name, Tensor::zeros(t.shape(), DType::F32, Device::cpu()));
  }
  return data;
}

std::string load_initial_weights(const TrainConfig& config, const std::string& data_tokenizer_text, nn::GPT& model,
                                 AdamW& optimizer, const dist::TensorParallel& tp) {
  const InitSource source = describe_init_source(config.checkpoint.init_from);
  const nn::GPTConfig& run = model.config();
  ND_CHECK_INPUT(source.model.vocab_size == run.vocab_size,
                 "--init-from " << source.path << " has a vocabulary of " << source.model.vocab_size
                                << " tokens, the data in " << config.data.dir << " " << run.vocab_size
                                << "; tokenize the text with the source's tokenizer (nanodist prepare --tokenizer-from "
                                << config.checkpoint.init_from << ")");
  ND_CHECK_INPUT(source.tokenizer_text.empty() || data_tokenizer_text.empty() ||
                     source.tokenizer_text == data_tokenizer_text,
                 "the data in " << config.data.dir << " were tokenized with another tokenizer than --init-from "
                                << source.path << "; prepare them with nanodist prepare --tokenizer-from "
                                << config.checkpoint.init_from);
  nn::GPTConfig expected = source.model;
  expected.block_size = run.block_size;
  check_same_model(expected, run, source.path);
  const CheckpointData data = initial_weights(source, run.block_size);
  std::set<std::string> wanted, have;
  for (const auto& [name, p] : model.named_parameters()) wanted.insert(name);
  for (const auto& [name, t] : data.params) have.insert(name);
  // A pipeline stage holds some of the model's tensors: the source's others belong to other stages.
  const bool whole_model = model.is_first_stage() && model.is_last_stage();
  for (const std::string& name : have)
    ND_CHECK_INPUT(!whole_model || wanted.count(name),
                   source.path << " holds " << name << ", which nanodist's GPT has no place for");
  for (const std::string& name : wanted)
    ND_CHECK_INPUT(have.count(name), source.path << " has no " << name);
  load_model(data, source.path, model, &optimizer, tp);
  return source.path;
}

std::string tokenizer_text_of(const std::string& path) {
  const InitSource source = describe_init_source(path);
  ND_CHECK_INPUT(!source.tokenizer_text.empty(),
                 path << " has no tokenizer ("
                      << (source.hugging_face ? std::string(kExportedTokenizer) + ", tokenizer.json and vocab.json + "
                                                                                  "merges.txt are all missing"
                                              : "its model was trained on llm.c or nanoGPT token files")
                      << ")");
  return source.tokenizer_text;
}

}  // namespace nd::train
