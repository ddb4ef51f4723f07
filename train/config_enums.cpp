// The flag spellings of TrainConfig's choices (config_enums.h).
#include "train/config_enums.h"

#include <sstream>

#include "tensor/error.h"

namespace nd::train {

AttentionBackend parse_attention_backend(const std::string& text) {
  if (text == "ours") return AttentionBackend::Ours;
  if (text == "cudnn") return AttentionBackend::Cudnn;
  if (text == "auto") return AttentionBackend::Auto;
  ND_FAIL_INPUT("--attention must be ours, cudnn or auto, got '" << text << "'");
}

const char* attention_backend_name(AttentionBackend backend) {
  switch (backend) {
    case AttentionBackend::Ours: return "ours";
    case AttentionBackend::Cudnn: return "cudnn";
    case AttentionBackend::Auto: return "auto";
  }
  return "?";
}

AsyncSave parse_async_save(const std::string& text) {
  if (text == "false") return AsyncSave::Off;
  if (text == "true") return AsyncSave::On;
  if (text == "auto") return AsyncSave::Auto;
  ND_FAIL_INPUT("--async-save must be true, false or auto, got '" << text << "'");
}

const char* async_save_name(AsyncSave mode) {
  switch (mode) {
    case AsyncSave::Off: return "false";
    case AsyncSave::On: return "true";
    case AsyncSave::Auto: return "auto";
  }
  return "?";
}

Fp8Layers parse_fp8_layers(const std::string& text) {
  Fp8Layers layers{false, false, false};
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) {
    const bool all = item == "all";
    ND_CHECK_INPUT(all || item == "attn" || item == "mlp" || item == "head",
                   "--fp8-layers takes all or a comma list of attn, mlp, head; got '" << item << "'");
    layers.attn = layers.attn || all || item == "attn";
    layers.mlp = layers.mlp || all || item == "mlp";
    layers.head = layers.head || all || item == "head";
  }
  return layers;
}

std::string fp8_layers_text(const Fp8Layers& layers) {
  if (layers.attn && layers.mlp && layers.head) return "all";
  std::string text;
  for (auto [on, name] : {std::pair<bool, const char*>{layers.attn, "attn"}, {layers.mlp, "mlp"}, {layers.head, "head"}})
    if (on) text += (text.empty() ? "" : ",") + std::string(name);
  return text;
}

nn::Recompute parse_recompute(const std::string& text) {
  if (text == "none") return nn::Recompute::None;
  if (text == "attention") return nn::Recompute::Attention;
  if (text == "block") return nn::Recompute::Block;
  ND_FAIL_INPUT("--recompute must be none, attention or block, got '" << text << "'");
}

const char* recompute_name(nn::Recompute recompute) {
  switch (recompute) {
    case nn::Recompute::None: return "none";
    case nn::Recompute::Attention: return "attention";
    case nn::Recompute::Block: return "block";
  }
  return "?";
}

dist::Algorithm parse_collectives_flag(const std::string& text) {
  ND_CHECK_INPUT(text == "native" || text == "ring" || text == "hierarchical" || text == "peer" || text == "auto",
                 "--collectives (or --allreduce) must be native, ring, hierarchical, peer or auto, got '" << text
                                                                                                          << "'");
  return dist::parse_algorithm(text);  // one of the five checked above
}

const char* dtype_flag_name(DType dtype) { return dtype == DType::F16 ? "fp16" : dtype_name(dtype); }

std::optional<DType> parse_grad_dtype(const std::string& text) {
  if (text.empty()) return std::nullopt;
  return parse_dtype(text);
}

}  // namespace nd::train
