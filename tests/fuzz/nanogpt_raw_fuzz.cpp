// Fuzz target: nanoGPT's raw train.bin (u16 tokens, no header), opened as `train --data DIR
// --vocab-size 65` opens it (no meta.pkl beside it).
#include "dataset_use.h"
#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nd::fuzz::write_file("data/train.bin", std::string(reinterpret_cast<const char*>(data), size));
  nd::fuzz::expect_input_errors_only([&] { nd::fuzz::use_dataset(nd::fuzz::scratch_dir() + "/data", 65); });
  return 0;
}
