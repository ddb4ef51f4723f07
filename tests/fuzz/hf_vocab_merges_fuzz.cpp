// Fuzz target: a Hugging Face vocab.json + merges.txt pair (GPT-2's tokenizer files), one input
// holding both (fuzz_target.h's kNextFile between them), through the reader `prepare
// --tokenizer-from DIR` uses, then the nanodist tokenizer it becomes, encoded and decoded.
#include "data/gpt2_tokenizer.h"
#include "fuzz_target.h"
#include "tokenizer_use.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> files = nd::fuzz::split_files(data, size, 2);
  nd::fuzz::write_file("hf/vocab.json", files[0]);
  nd::fuzz::write_file("hf/merges.txt", files[1]);
  const std::string dir = nd::fuzz::scratch_dir() + "/hf";
  nd::fuzz::expect_input_errors_only([&] { nd::fuzz::use_tokenizer(nd::Tokenizer::from_text(nd::gpt2_tokenizer_text_from_dir(dir), dir)); });
  return 0;
}
