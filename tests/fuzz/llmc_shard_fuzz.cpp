// Fuzz target: an llm.c token shard (256 x int32 header: magic, version, count; then u16 or u32
// tokens), opened as `train --data DIR` opens a directory of shards.
#include "dataset_use.h"
#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nd::fuzz::write_file("data/fineweb_train_000001.bin", std::string(reinterpret_cast<const char*>(data), size));
  nd::fuzz::expect_input_errors_only([&] { nd::fuzz::use_dataset(nd::fuzz::scratch_dir() + "/data", 0); });
  return 0;
}
