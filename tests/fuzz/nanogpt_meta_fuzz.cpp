// Fuzz target: nanoGPT's meta.pkl (a pickled dict: vocab_size, itos, stoi) beside a fixed raw
// train.bin, opened as `train --data DIR` opens it: the vocabulary and the char tokenizer come
// from the pickle.
#include "dataset_use.h"
#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string tokens = nd::fuzz::write_file("data/train.bin", std::string("\x01\x00\x02\x00\x03\x00", 6));
  nd::fuzz::write_file("data/meta.pkl", std::string(reinterpret_cast<const char*>(data), size));
  nd::fuzz::expect_input_errors_only([&] { nd::fuzz::use_dataset(nd::fuzz::scratch_dir() + "/data", 0); });
  return 0;
}
