// Fuzz target: a Hugging Face tokenizer.json (GPT-2 byte-level BPE), through the reader that
// `prepare --tokenizer-from DIR` and --data beside GPT-2's tokenizer files use, then the
// nanodist tokenizer it becomes, encoded and decoded.
#include "data/gpt2_tokenizer.h"
#include "fuzz_target.h"
#include "tokenizer_use.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nd::fuzz::write_file("hf/tokenizer.json", std::string(reinterpret_cast<const char*>(data), size));
  const std::string dir = nd::fuzz::scratch_dir() + "/hf";
  nd::fuzz::expect_input_errors_only([&] { nd::fuzz::use_tokenizer(nd::Tokenizer::from_text(nd::gpt2_tokenizer_text_from_dir(dir), dir)); });
  return 0;
}
