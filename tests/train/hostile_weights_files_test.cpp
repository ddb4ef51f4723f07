// Hostile weight files: each crafted file below once passed a size check by overflow, read or
// allocated past what the file holds, or described a model larger than its weights (which was
// then built, gigabytes at a time). Each must now be one input error naming what is wrong.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <climits>
#include <fstream>
#include <sstream>

#include "train/ckpt/checkpoint.h"
#include "train/ckpt/checksum.h"
#include "train/ckpt/hdf5_file.h"
#include "train/ckpt/init_from.h"
#include "train/model_config.h"
#include "train/ckpt/safetensors.h"
#include "train_fixture.h"
#include "common/expect_input_error.h"

namespace nd::train {
namespace {

using testing::TempDir;

using nd::testing::expect_input_error;

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// A .safetensors file with this JSON header and `data_bytes` zero bytes of data.
void write_safetensors(const std::string& path, const std::string& header, size_t data_bytes) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  write_text(path, out + header + std::string(data_bytes, '\0'));
}

TEST(HostileSafetensors, AShapeWhoseByteCountWrapsIsRefused) {
  // 4 x (2^62 + 192) is 768 in 64 bits: this file passed the size check and --init-from crashed.
  TempDir dir;
  write_safetensors(dir / "m.safetensors",
                    R"({"w":{"dtype":"F32","shape":[4611686018427388096],"data_offsets":[0,768]}})", 768);
  expect_input_error([&] { read_safetensors(dir / "m.safetensors"); }, "overflows a 64-bit size");
  expect_input_error([&] { read_safetensors_header(dir / "m.safetensors"); }, "overflows a 64-bit size");
}

TEST(HostileSafetensors, DimensionsWhoseProductWrapsToZeroAreRefused) {
  // 2^32 x 2^32 elements wrap to 0, matching an empty byte range.
  TempDir dir;
  write_safetensors(dir / "m.safetensors",
                    R"({"w":{"dtype":"F16","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", 0);
  expect_input_error([&] { read_safetensors(dir / "m.safetensors"); }, "overflows a 64-bit size");
}

// A Hugging Face GPT-2 directory of 1 layer, width 4, vocabulary and context 8, zero weights, with
// `config` as its config.json.
void write_hf_dir(const std::string& dir, const std::string& config) {
  std::filesystem::create_directories(dir);
  const struct {
    const char* name;
    const char* shape;
    size_t bytes;
  } tensors[] = {{"wte.weight", "8,4", 128}, {"wpe.weight", "8,4", 128}, {"h.0.attn.c_proj.weight", "4,4", 64}};
  std::string header = "{";
  size_t at = 0;
  for (const auto& [name, shape, bytes] : tensors) {
    header += std::string(at ? "," : "") + "\"" + name + "\":{\"dtype\":\"F32\",\"shape\":[" + shape +
              "],\"data_offsets\":[" + std::to_string(at) + "," + std::to_string(at + bytes) + "]}";
    at += bytes;
  }
  write_safetensors(dir + "/model.safetensors", header + "}", at);
  write_text(dir + "/config.json", config);
}

std::string gpt2_config(const std::string& n_layer, const std::string& n_embd) {
  return R"({"model_type":"gpt2","n_layer":)" + n_layer + R"(,"n_head":1,"n_embd":)" + n_embd +
         R"(,"n_positions":8,"vocab_size":8})";
}

TEST(HostileHuggingFaceConfig, AModelLargerThanItsWeightsIsRefusedBeforeItIsBuilt) {
  TempDir dir;
  write_hf_dir(dir / "hf", gpt2_config("1", "4"));
  EXPECT_EQ(describe_init_source(dir / "hf").model.n_layer, 1);  // the honest directory reads
  write_hf_dir(dir / "hf", gpt2_config("2000000000", "4"));
  expect_input_error([&] { describe_init_source(dir / "hf"); }, "have no transformer.h.1.attn.c_proj.weight");
  // 4 x n_embd (for n_inner) no longer overflows an int; the width must still match the weights.
  write_hf_dir(dir / "hf", gpt2_config("1", "2147483647"));
  expect_input_error([&] { describe_init_source(dir / "hf"); }, "have no transformer.wte.weight of shape");
}

// A real one-part checkpoint of two tensors, params/a (2, 3) and params/b (4), to tamper with.
std::string write_small_checkpoint(const std::string& dir) {
  CheckpointData data;
  data.params = {{"a", Tensor::zeros({2, 3})}, {"b", Tensor::zeros({4})}};
  data.tokenizer_text = "nanodist-tokenizer ids\nvocab_size 5\n";
  const std::string path = checkpoint_path(dir, 1);
  write_checkpoint(path, data);
  return path;
}

// Replaces the index's slice table (and its checksum, so the table is believed and read).
void replace_slice_table(const std::string& index, const std::string& table) {
  const hid_t file = H5Fopen(index.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  ASSERT_GE(H5Ldelete(file, "/slices", H5P_DEFAULT), 0);
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  const hid_t scalar = H5Screate(H5S_SCALAR);
  const hid_t dset = H5Dcreate2(file, "/slices", type, scalar, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const char* text = table.c_str();
  ASSERT_GE(H5Dwrite(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, &text), 0);
  // Replaced, not rewritten: HDF5 1.10 cannot write an attribute of this index in place.
  ASSERT_GE(H5Adelete_by_name(file, "/checkpoint", "slices_checksum", H5P_DEFAULT), 0);
  const hid_t attr = H5Acreate_by_name(file, "/checkpoint", "slices_checksum", H5T_STD_I64LE, scalar, H5P_DEFAULT,
                                       H5P_DEFAULT, H5P_DEFAULT);
  const int64_t sum = static_cast<int64_t>(checksum64(table.data(), table.size()));
  ASSERT_GE(H5Awrite(attr, H5T_NATIVE_INT64, &sum), 0);
  H5Aclose(attr);
  H5Dclose(dset);
  H5Sclose(scalar);
  H5Tclose(type);
  H5Fclose(file);
}

std::vector<std::vector<std::string>> slice_lines(const std::string& index) {
  std::istringstream lines(Hdf5File::open_read(index).read_string("/slices"));
  std::vector<std::vector<std::string>> out;
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> fields;
    std::istringstream in(line);
    for (std::string f; std::getline(in, f, '\t');) fields.push_back(f);
    out.push_back(fields);
  }
  return out;
}

std::string table_of(const std::vector<std::vector<std::string>>& lines) {
  std::string out;
  for (const auto& fields : lines) {
    for (size_t i = 0; i < fields.size(); ++i) out += (i ? "\t" : "") + fields[i];
    out += "\n";
  }
  return out;
}

TEST(HostileCheckpoint, SliceTablesThatLieAboutSizesAreRefused) {
  TempDir dir;
  const std::string index = write_small_checkpoint(dir.path());
  const auto lines = slice_lines(index);
  ASSERT_EQ(lines[0][1], "a");  // fields: group name part dataset offset count full_shape checksum file_offset
  EXPECT_EQ(read_checkpoint(index).params.size(), 2u);
  // Each tampering, applied to a fresh copy of the honest table, and the error it must give.
  const struct {
    int field;
    std::string value;
    std::string needle;
  } cases[] = {
      {5, "3,3", "lies outside its tensor's shape"},               // a box past the tensor's rows
      {8, "-4096", "negative file offset"},                        // bytes before the file
      {8, "1000000000000", "is truncated at"},                     // bytes past the part's end
      {2, "../../etc/passwd", "not a file below the checkpoint"},  // a part outside the checkpoint
      {6, "20,3", "hold 6 elements, its shape 20,3 has 60"},       // slices that do not add up
      {6, "4611686018427388096,4", "overflows a 64-bit size"},     // elements past 2^63
  };
  for (const auto& c : cases) {
    auto tampered = lines;
    tampered[0][c.field] = c.value;
    if (c.field == 6 && c.value == "4611686018427388096,4") tampered[0][5] = c.value;
    replace_slice_table(index, table_of(tampered));
    SCOPED_TRACE("field " + std::to_string(c.field) + " = " + c.value);
    expect_input_error([&] { read_checkpoint(index); }, c.needle);
  }
}

TEST(HostileCheckpoint, AConfigLargerThanItsWeightsIsRefused) {
  CheckpointData data;
  data.params = {{"transformer.wte.weight", Tensor::zeros({8, 4})},
                 {"transformer.wpe.weight", Tensor::zeros({8, 4})},
                 {"transformer.h.0.attn.c_proj.weight", Tensor::zeros({4, 4})}};
  auto config = [](int64_t n_layer) {
    return std::vector<std::pair<std::string, AttrValue>>{
        {"n_layer", n_layer},  {"n_head", int64_t{1}},      {"n_embd", int64_t{4}},
        {"block_size", int64_t{8}}, {"vocab_size", int64_t{8}}, {"padded_vocab_size", int64_t{0}},
        {"dropout", 0.0},      {"bias", int64_t{1}},        {"use_layernorm", int64_t{1}},
        {"use_residual", int64_t{1}}};
  };
  data.config = config(1);
  EXPECT_EQ(model_config_from_checkpoint(data, "ckpt").n_layer, 1);
  data.config = config(100000);
  expect_input_error([&] { model_config_from_checkpoint(data, "ckpt"); },
                     "have no transformer.h.1.attn.c_proj.weight");
  data.config = config(int64_t{1} << 32);  // used to wrap to 0 layers in the int field
  expect_input_error([&] { model_config_from_checkpoint(data, "ckpt"); }, "is 4294967296, outside [0, 2147483647]");
}

TEST(HostileCheckpoint, AnOldSingleFileDatasetLargerThanItsBytesIsRefused) {
  TempDir dir;
  const std::string path = dir / "old.h5";
  {
    Hdf5File file = Hdf5File::create(path);
    const hsize_t dims[1] = {hsize_t{1} << 40};  // 4 TiB of f32 that were never written
    const hid_t space = H5Screate_simple(1, dims, nullptr);
    const hid_t dset = H5Dcreate2(file.id(), "/w", H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(dset, 0);
    H5Dclose(dset);
    H5Sclose(space);
  }
  expect_input_error([&] { Hdf5File::open_read(path).read_tensor("/w"); }, "stores 0 bytes");
}

}  // namespace
}  // namespace nd::train
