// Fuzz target: a sharded checkpoint's contents through our checks. One input holds four files
// (fuzz_target.h's kNextFile between them): the slice table (/slices of the index), the bytes of
// part 0 (ckpt_000001.parts/rank_00000.h5, which the reader only preads), the /config attributes
// ("name = value" lines: an integer, else a number, else a string) and the /tokenizer text. The
// target writes them as a well-formed HDF5 index (its slice checksum right, so the table is read)
// and loads it as `train --init-from FILE` and `sample` do: every tensor, the model config checked
// against the weights, the tokenizer. HDF5's own parsing of a damaged file is the HDF5 library's
// business and not fuzzed here.
#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "fuzz_target.h"
#include "train/ckpt/checksum.h"
#include "train/ckpt/hdf5_file.h"
#include "train/ckpt/init_from.h"
#include "tokenizer_use.h"

namespace {

// HDF5 strings end at a NUL.
std::string c_string(const std::string& s) { return s.substr(0, s.find('\0')); }

nd::train::AttrValue attr_value(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const long long i = std::strtoll(text.c_str(), &end, 10);
  if (!text.empty() && *end == '\0' && errno == 0) return int64_t{i};
  const double d = std::strtod(text.c_str(), &end);
  if (!text.empty() && *end == '\0') return d;
  return text;
}

// The index as write_checkpoint_index lays it out, from the fuzzer's table, config and tokenizer.
void write_index(const std::string& path, const std::string& table, const std::string& config,
                 const std::string& tokenizer) {
  using nd::train::AttrValue;
  nd::train::Hdf5File file = nd::train::Hdf5File::create(path);
  file.create_group("/config");
  std::istringstream lines(config);
  for (std::string line; std::getline(lines, line);) {
    const size_t eq = line.find(" = ");
    if (eq == std::string::npos || eq == 0) continue;
    file.set_attr("/config", c_string(line.substr(0, eq)), attr_value(c_string(line.substr(eq + 3))));
  }
  file.create_group("/state");
  for (const char* name : {"step", "optimizer_step", "dropout_seed", "dropout_stream", "dropout_offset", "data_step",
                           "tokens", "loss_scale_finite_steps", "overflow_skips"})
    file.set_attr("/state", name, int64_t{0});
  file.set_attr("/state", "world_size", int64_t{1});
  file.set_attr("/state", "best_val_loss", 2.5);
  file.set_attr("/state", "loss_scale", 1.0);
  file.write_string("/tokenizer", c_string(tokenizer));
  file.write_string("/slices", table);
  file.create_group("/checkpoint");
  file.set_attr("/checkpoint", "format", std::string("nanodist-sharded-1"));
  file.set_attr("/checkpoint", "parts", int64_t{1});
  file.set_attr("/checkpoint", "slices_checksum", static_cast<int64_t>(nd::train::checksum64(table.data(), table.size())));
  file.set_attr("/checkpoint", nd::train::kChecksumAttribute, std::string(nd::train::kChunkedChecksum));
  file.close();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> files = nd::fuzz::split_files(data, size, 4);
  const std::string table = c_string(files[0]);
  nd::fuzz::write_file("ckpt/ckpt_000001.parts/rank_00000.h5", files[1]);
  const std::string index = nd::fuzz::scratch_dir() + "/ckpt/ckpt_000001.h5";
  try {
    write_index(index, table, files[2], files[3]);
  } catch (const nd::Error&) {
    return 0;  // names HDF5 cannot hold (an empty attribute name): no checkpoint to read
  }
  nd::fuzz::expect_input_errors_only([&] {
    const nd::train::InitSource source = nd::train::describe_init_source(index);
    if (!source.tokenizer_text.empty()) nd::fuzz::use_tokenizer(nd::Tokenizer::from_text(source.tokenizer_text, index));
  });
  return 0;
}
