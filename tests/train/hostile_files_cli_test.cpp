// Hostile files through the binary, as a user meets them: each ends in one `nanodist: error:`
// line and exit status 1, no signal. The safetensors file whose shape wraps 4 x (2^62 + 192) to
// its 768 bytes (it used to crash `train --init-from`), a meta.pkl whose vocabulary is past int32,
// a tokenizer.txt whose merges keep doubling, and a checkpoint whose config claims two billion
// layers for weights of one.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <filesystem>
#include <fstream>

#include "train/ckpt/checkpoint.h"
#include "train_fixture.h"

namespace nd::train::testing {
namespace {

const char* kTiny =
    " --n-layer 1 --n-head 1 --n-embd 4 --block-size 8 --batch-size 2 --max-iters 1 --eval-interval 0"
    " --eval-iters 1 --warmup-iters 1 --threads 1";

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// One line, the user's sentence (not an internal check's text), exit status 1 (not a signal).
void expect_one_line_exit_1(const CommandResult& r, const std::string& needle) {
  expect_cli_error(r, needle);
  EXPECT_EQ(r.err.find("(check `"), std::string::npos) << r.err;
  EXPECT_EQ(r.exit_code, 1) << "exit status 1, not a signal: " << r.err;
}

TEST(HostileFilesCli, EachEndsInOneErrorLine) {
  TempDir dir;
  write_tiny_data(dir / "data", 2000);

  // A GPT-2 directory whose weights claim [4611686018427388096] f32 in 768 bytes, beside data of
  // its vocabulary (8), so nothing else stops the run first: this segfaulted.
  ASSERT_EQ(run_nanodist("prepare --random-tokens 3000 --vocab-size 8 --out " + (dir / "ids8"), dir.path()).exit_code, 0);
  std::filesystem::create_directories(dir / "hf");
  write_text(dir / "hf/config.json",
             R"({"model_type":"gpt2","n_layer":1,"n_head":1,"n_embd":4,"n_positions":8,"vocab_size":8})");
  const std::string header = R"({"wte.weight":{"dtype":"F32","shape":[4611686018427388096],"data_offsets":[0,768]}})";
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  write_text(dir / "hf/model.safetensors", bytes + header + std::string(768, '\0'));
  expect_one_line_exit_1(
      run_nanodist("train --data " + (dir / "ids8") + " --out " + (dir / "o1") + " --init-from " + (dir / "hf") +
                       " --batch-size 2 --max-iters 1 --eval-interval 0 --threads 1",
                       dir.path()),
      "overflows a 64-bit size");

  // nanoGPT data whose meta.pkl says vocab_size = 2^32 + 5 ({'vocab_size': 2**32 + 5} pickled):
  // its tokens (257) passed the check against it, and the model's int vocabulary wrapped to 5.
  std::filesystem::create_directories(dir / "nanogpt");
  write_text(dir / "nanogpt/train.bin", std::string(2000, '\1'));
  write_text(dir / "nanogpt/val.bin", std::string(2000, '\1'));
  const std::string big = std::string("\x8a\x05", 2) + std::string("\x05\0\0\0\x01", 5);  // LONG1, 5 bytes
  write_text(dir / "nanogpt/meta.pkl", std::string("\x80\x04}\x8c\x0a", 5) + "vocab_size" + big + "s.");
  expect_one_line_exit_1(run_nanodist("train --data " + (dir / "nanogpt") + " --out " + (dir / "o2") + kTiny, dir.path()),
                         "no vocab_size in [1, 2147483647]");

  // A tokenizer.txt of 40 merges, each doubling the last token: 2^41 bytes to spell.
  std::filesystem::copy(dir / "data", dir / "bomb", std::filesystem::copy_options::recursive);
  std::string bomb = "nanodist-tokenizer bpe\nvocab_size 296\nmerges 40\n256 97 97\n";
  for (int i = 1; i < 40; ++i)
    bomb += std::to_string(256 + i) + " " + std::to_string(255 + i) + " " + std::to_string(255 + i) + "\n";
  write_text(dir / "bomb/tokenizer.txt", bomb);
  expect_one_line_exit_1(run_nanodist("train --data " + (dir / "bomb") + " --out " + (dir / "o3") + kTiny, dir.path()),
                         "bytes in all");

  // A checkpoint of one layer whose /config says 2000000000 layers: `sample` used to build them.
  ASSERT_EQ(run_nanodist("train --data " + (dir / "data") + " --out " + (dir / "run") + kTiny, dir.path()).exit_code, 0);
  const std::string index = newest_checkpoint(dir / "run");
  ASSERT_FALSE(index.empty());
  const hid_t file = H5Fopen(index.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  // Replaced, not rewritten: HDF5 1.10 cannot write an attribute of this index in place.
  ASSERT_GE(H5Adelete_by_name(file, "/config", "n_layer", H5P_DEFAULT), 0);
  const hid_t scalar = H5Screate(H5S_SCALAR);
  const hid_t attr =
      H5Acreate_by_name(file, "/config", "n_layer", H5T_STD_I64LE, scalar, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const int64_t layers = 2000000000;
  ASSERT_GE(H5Awrite(attr, H5T_NATIVE_INT64, &layers), 0);
  H5Aclose(attr);
  H5Sclose(scalar);
  H5Fclose(file);
  expect_one_line_exit_1(run_nanodist("sample --ckpt " + (dir / "run") + " --tokens 2", dir.path()),
                         "have no transformer.h.1.attn.c_proj.weight");
}

}  // namespace
}  // namespace nd::train::testing
