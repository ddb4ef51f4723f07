// Fuzz target: a Hugging Face GPT-2 directory's config.json (and so the JSON parser) beside a
// fixed small model.safetensors, through what `train --init-from DIR` reads before it builds the
// model, then the weights it loads.
#include "fuzz_target.h"
#include "train/ckpt/init_from.h"

namespace {

// A GPT-2 of 1 layer, width 4, 8 positions, vocabulary 8, as scripts/export_hf.py lays it out
// (names, Conv1D shapes), all values zero: the tensor bytes are not what is fuzzed here.
std::string tiny_safetensors() {
  const struct {
    const char* name;
    std::vector<int> shape;
  } tensors[] = {{"wte.weight", {8, 4}},          {"wpe.weight", {8, 4}},
                 {"h.0.ln_1.weight", {4}},        {"h.0.ln_1.bias", {4}},
                 {"h.0.attn.c_attn.weight", {4, 12}}, {"h.0.attn.c_attn.bias", {12}},
                 {"h.0.attn.c_proj.weight", {4, 4}},  {"h.0.attn.c_proj.bias", {4}},
                 {"h.0.ln_2.weight", {4}},        {"h.0.ln_2.bias", {4}},
                 {"h.0.mlp.c_fc.weight", {4, 16}},    {"h.0.mlp.c_fc.bias", {16}},
                 {"h.0.mlp.c_proj.weight", {16, 4}},  {"h.0.mlp.c_proj.bias", {4}},
                 {"ln_f.weight", {4}},            {"ln_f.bias", {4}}};
  std::string header = "{", body;
  for (const auto& t : tensors) {
    size_t numel = 1;
    std::string shape;
    for (int d : t.shape) {
      numel *= static_cast<size_t>(d);
      shape += (shape.empty() ? "" : ",") + std::to_string(d);
    }
    const size_t begin = body.size();
    body.append(numel * 4, '\0');
    header += std::string(header.size() > 1 ? "," : "") + "\"" + t.name + "\":{\"dtype\":\"F32\",\"shape\":[" + shape +
              "],\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(body.size()) + "]}";
  }
  header += "}";
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return out + header + body;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string weights = nd::fuzz::write_file("hf/model.safetensors", tiny_safetensors());
  nd::fuzz::write_file("hf/config.json", std::string(reinterpret_cast<const char*>(data), size));
  const std::string dir = nd::fuzz::scratch_dir() + "/hf";
  nd::fuzz::expect_input_errors_only([&] {
    const nd::train::InitSource source = nd::train::describe_init_source(dir);
    nd::train::initial_weights(source, source.model.block_size);
  });
  return 0;
}
