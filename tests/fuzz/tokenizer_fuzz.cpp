// Fuzz target: nanodist's tokenizer files (char, bpe, ids, gpt2 kinds; DIR/tokenizer.txt and a
// checkpoint's /tokenizer), through Tokenizer::load, then encoded and decoded.
#include "fuzz_target.h"
#include "tokenizer_use.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = nd::fuzz::write_file("tokenizer.txt", std::string(reinterpret_cast<const char*>(data), size));
  nd::fuzz::expect_input_errors_only([&] { nd::fuzz::use_tokenizer(nd::Tokenizer::load(path)); });
  return 0;
}
