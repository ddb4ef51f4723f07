// Fuzz target: model.safetensors (Hugging Face weights), through the reader --init-from uses, whole
// and header only.
#include "fuzz_target.h"
#include "train/ckpt/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = nd::fuzz::write_file("model.safetensors", std::string(reinterpret_cast<const char*>(data), size));
  nd::fuzz::expect_input_errors_only([&] { nd::train::read_safetensors_header(path); });
  nd::fuzz::expect_input_errors_only([&] {
    for (const auto& [name, tensor] : nd::train::read_safetensors(path)) (void)tensor.to_float_vector();
  });
  return 0;
}
