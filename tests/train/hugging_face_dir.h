// Hugging Face files written by hand for the --init-from tests: a .safetensors file from raw bytes,
// and a nanodist checkpoint as a GPT-2 directory the way Hugging Face publishes one (GPT-2's names
// without "transformer.", Conv1D weights transposed to (in, out), the tied lm_head and a causal-mask
// buffer beside them, config.json with the checkpoint's shape).
#pragma once
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "train/ckpt/checkpoint.h"
#include "train/model_config.h"

namespace nd::train::testing {

struct RawTensor {
  std::string name, dtype;
  Shape shape;
  std::string bytes;  // little-endian, as stored
};

inline std::string f32_bytes(const std::vector<float>& values) {
  std::string out(values.size() * 4, '\0');
  std::memcpy(out.data(), values.data(), out.size());  // the test machine is little-endian (x86, arm64)
  return out;
}

// A .safetensors file: the header lists tensors in order, data back to back.
inline void write_safetensors(const std::string& path, const std::vector<RawTensor>& tensors) {
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"}", data;
  for (const RawTensor& t : tensors) {
    header += ",\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i) header += (i ? "," : "") + std::to_string(t.shape[i]);
    header += "],\"data_offsets\":[" + std::to_string(data.size()) + "," + std::to_string(data.size() + t.bytes.size()) +
              "]}";
    data += t.bytes;
  }
  header += "}";
  std::ofstream out(path, std::ios::binary);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xFF));
  out << header << data;
}

// The checkpoint at `ckpt` as a GPT-2 directory `dir`, its weights in f32 (so a load gives them
// back bit for bit).
inline void export_as_gpt2(const std::string& ckpt, const std::string& dir) {
  CheckpointData data = read_checkpoint(ckpt);
  const nn::GPTConfig model = model_config_from_checkpoint(data, ckpt);
  std::filesystem::create_directories(dir);
  int64_t vocab = 0, positions = 0, width = 0;
  std::vector<RawTensor> tensors;
  std::string wte_bytes;
  for (const auto& [name, t] : data.params) {
    std::string hf = name.substr(std::string("transformer.").size());
    Tensor out = t;
    bool conv1d = false;
    for (const char* s : {"c_attn.weight", "attn.c_proj.weight", "c_fc.weight", "mlp.c_proj.weight"})
      conv1d = conv1d || hf.find(s) != std::string::npos;
    if (conv1d) {  // (out, in) -> (in, out)
      const int64_t rows = t.shape()[0], cols = t.shape()[1];
      out = Tensor::empty({cols, rows});
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) out.data<float>()[c * rows + r] = t.data<float>()[r * cols + c];
    }
    if (hf == "wte.weight") vocab = t.shape()[0], width = t.shape()[1];
    if (hf == "wpe.weight") positions = t.shape()[0];
    const float* p = out.data<float>();
    tensors.push_back({hf, "F32", out.shape(), f32_bytes(std::vector<float>(p, p + out.numel()))});
    if (hf == "wte.weight") wte_bytes = tensors.back().bytes;
    if (hf == "h.0.attn.c_attn.bias")  // a causal-mask buffer, as older exports keep
      tensors.push_back({"h.0.attn.bias", "F32", {1, 1, 2, 2}, f32_bytes({1, 0, 1, 1})});
  }
  tensors.push_back({"lm_head.weight", "F32", {vocab, width}, wte_bytes});
  write_safetensors(dir + "/model.safetensors", tensors);
  std::ofstream(dir + "/config.json") << "{\"model_type\": \"gpt2\", \"n_layer\": " << model.n_layer
                                      << ", \"n_head\": " << model.n_head << ", \"n_embd\": " << width
                                      << ", \"n_positions\": " << positions << ", \"vocab_size\": " << vocab
                                      << ", \"n_inner\": null, \"activation_function\": \"gelu_new\", "
                                         "\"layer_norm_epsilon\": 1e-05, \"tie_word_embeddings\": true}";
}

}  // namespace nd::train::testing
