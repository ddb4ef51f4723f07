// Fuzz target: a nanodist token file (DIR/train.bin: 256 x int32 header, then the tokens), opened
// as `train --data DIR` opens it, beside a fixed tokenizer.txt.
#include "dataset_use.h"
#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string tokenizer = nd::fuzz::write_file("data/tokenizer.txt", "nanodist-tokenizer ids\nvocab_size 65\n");
  nd::fuzz::write_file("data/train.bin", std::string(reinterpret_cast<const char*>(data), size));
  nd::fuzz::expect_input_errors_only([&] { nd::fuzz::use_dataset(nd::fuzz::scratch_dir() + "/data", 0); });
  return 0;
}
