// Checkpoint files: a full round trip of named tensors, attributes and state; the atomic write
// (no temporary left, no file under the real name after a failure); keep-N; newest-complete
// selection that ignores temporaries; and the model / vocabulary checks used on resume.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "tensor/random.h"
#include "train/ckpt/checkpoint.h"
#include "train/ckpt/checkpoint_model.h"
#include "train_fixture.h"

namespace nd::train {
namespace {

using testing::TempDir;

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

CheckpointData sample_data() {
  Generator gen(11);
  CheckpointData d;
  d.config = {{"n_layer", int64_t{2}}, {"lr", 6e-4}, {"device", std::string("cpu")}};
  d.params = {{"transformer.wte.weight", Tensor::randn({7, 4}, gen)},
              {"transformer.h.0.ln_1.bias", Tensor::randn({4}, gen)},
              {"three.d", Tensor::randn({2, 3, 5}, gen)}};
  for (const auto& [name, t] : d.params) {
    d.m.emplace_back(name, Tensor::randn(t.shape(), gen));
    d.v.emplace_back(name, Tensor::uniform(t.shape(), gen));
  }
  d.state.step = 250;
  d.state.optimizer_step = 250;
  d.state.dropout_seed = 1337;
  d.state.dropout_stream = 1;
  d.state.dropout_offset = (uint64_t{1} << 40) + 12345;
  d.state.data_step = 500;
  d.state.world_size = 4;
  d.state.best_val_loss = std::numeric_limits<double>::infinity();
  d.state.tokens = 123456789012;
  d.tokenizer_text = "nanodist-tokenizer char\nvocab_size 3\n0 10 \"\\n\"\n1 97 \"a\"\n";
  return d;
}

void expect_same_tensors(const NamedTensors& a, const NamedTensors& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) {
    const Tensor* found = nullptr;
    for (const auto& [name_b, tb] : b)
      if (name_b == name) found = &tb;
    ASSERT_NE(found, nullptr) << name;
    EXPECT_EQ(found->shape(), t.shape()) << name;
    EXPECT_EQ(found->dtype(), DType::F32);
    EXPECT_EQ(found->to_float_vector(), t.to_float_vector()) << name;  // bit-exact f32
  }
}

TEST(Checkpoint, RoundTripIsExact) {
  TempDir dir;
  CheckpointData d = sample_data();
  std::string path = checkpoint_path(dir.path(), 250);
  EXPECT_EQ(path, dir / "ckpt_000250.h5");
  write_checkpoint(path, d);
  CheckpointData r = read_checkpoint(path);
  expect_same_tensors(d.params, r.params);
  expect_same_tensors(d.m, r.m);
  expect_same_tensors(d.v, r.v);
  EXPECT_EQ(attr_as_int(find_attr(r.config, "n_layer", path), "n_layer"), 2);
  EXPECT_EQ(attr_as_double(find_attr(r.config, "lr", path), "lr"), 6e-4);
  EXPECT_EQ(attr_as_string(find_attr(r.config, "device", path), "device"), "cpu");
  EXPECT_THROW(find_attr(r.config, "missing", path), Error);
  EXPECT_EQ(r.state.step, 250);
  EXPECT_EQ(r.state.optimizer_step, 250);
  EXPECT_EQ(r.state.dropout_seed, 1337u);
  EXPECT_EQ(r.state.dropout_stream, 1u);
  EXPECT_EQ(r.state.dropout_offset, d.state.dropout_offset);
  EXPECT_EQ(r.state.data_step, 500u);
  EXPECT_EQ(r.state.world_size, 4);
  EXPECT_TRUE(std::isinf(r.state.best_val_loss));
  EXPECT_EQ(r.state.tokens, 123456789012);
  EXPECT_EQ(r.tokenizer_text, d.tokenizer_text);
  // The write was atomic: only the index and its parts are left, under their real names.
  EXPECT_EQ(files_in(dir.path()), (std::vector<std::string>{"ckpt_000250.h5", "ckpt_000250.parts"}));
  EXPECT_EQ(files_in(dir / "ckpt_000250.parts"), std::vector<std::string>{"rank_00000.h5"});
}

TEST(Checkpoint, FailedWriteLeavesNothing) {
  TempDir dir;
  CheckpointData d = sample_data();
  d.params.emplace_back("bad/name", Tensor::zeros({2}));
  EXPECT_THROW(write_checkpoint(checkpoint_path(dir.path(), 5), d), Error);
  EXPECT_TRUE(files_in(dir.path()).empty());
  EXPECT_THROW(write_checkpoint(dir / "no_such_dir/ckpt_000005.h5", sample_data()), Error);
}

TEST(Checkpoint, KeepNewestAndIgnoreTemporaries) {
  TempDir dir;
  CheckpointData d = sample_data();
  for (int step : {10, 20, 30, 40, 50}) write_checkpoint(checkpoint_path(dir.path(), step), d);
  std::ofstream(dir / "ckpt_000060.h5.tmp.999") << "half-written";
  std::ofstream(dir / "notes.txt") << "not a checkpoint";
  EXPECT_EQ(list_checkpoints(dir.path()).size(), 5u);
  EXPECT_EQ(newest_checkpoint(dir.path()), dir / "ckpt_000050.h5");
  EXPECT_EQ(resolve_checkpoint(dir.path()), dir / "ckpt_000050.h5");
  EXPECT_EQ(resolve_checkpoint(dir / "ckpt_000020.h5"), dir / "ckpt_000020.h5");
  prune_checkpoints(dir.path(), 2);
  EXPECT_EQ(files_in(dir.path()),
            (std::vector<std::string>{"ckpt_000040.h5", "ckpt_000040.parts", "ckpt_000050.h5", "ckpt_000050.parts",
                                      "ckpt_000060.h5.tmp.999", "notes.txt"}));
  prune_checkpoints(dir.path(), 0);  // 0 keeps all
  EXPECT_EQ(list_checkpoints(dir.path()).size(), 2u);
  // Steps beyond six digits still sort by number.
  write_checkpoint(checkpoint_path(dir.path(), 1234567), d);
  EXPECT_EQ(newest_checkpoint(dir.path()), dir / "ckpt_1234567.h5");
}

TEST(Checkpoint, MissingOrForeignFilesAreErrors) {
  TempDir dir;
  EXPECT_EQ(newest_checkpoint(dir / "absent"), "");
  EXPECT_THROW(resolve_checkpoint(dir.path()), Error);
  EXPECT_THROW(resolve_checkpoint(dir / "absent"), Error);
  EXPECT_THROW(read_checkpoint(dir / "absent.h5"), Error);
  std::ofstream(dir / "text.h5") << "not hdf5";
  try {
    read_checkpoint(dir / "text.h5");
    FAIL() << "a text file is not a checkpoint";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not an HDF5 file"), std::string::npos) << e.what();
  }
  Hdf5File empty = Hdf5File::create(dir / "empty.h5");
  empty.close();
  EXPECT_THROW(read_checkpoint(dir / "empty.h5"), Error);
}

TEST(CheckpointModel, ConfigAttributesRoundTripTheModel) {
  nn::GPTConfig m;
  m.n_layer = 3;
  m.n_head = 2;
  m.n_embd = 8;
  m.block_size = 12;
  m.vocab_size = 30;
  m.bias = false;
  m.use_residual = false;
  TrainConfig t = testing::tiny_config("d", "o");
  t.model.dropout = 0.1;
  auto attrs = config_attributes(m, t);
  nn::GPTConfig back = model_config_from_attributes(attrs, "x");
  EXPECT_EQ(back.n_layer, 3);
  EXPECT_EQ(back.n_embd, 8);
  EXPECT_EQ(back.block_size, 12);
  EXPECT_EQ(back.vocab_size, 30);
  EXPECT_FALSE(back.bias);
  EXPECT_FALSE(back.use_residual);
  EXPECT_TRUE(back.use_layernorm);
  EXPECT_EQ(attr_as_double(find_attr(attrs, "dropout", "x"), "dropout"), 0.1);
  EXPECT_EQ(attr_as_double(find_attr(attrs, "lr", "x"), "lr"), t.optim.lr);
  EXPECT_EQ(attr_as_string(find_attr(attrs, "data", "x"), "data"), "d");
  EXPECT_EQ(attr_as_int(find_attr(attrs, "grad_accum", "x"), "grad_accum"), 1);
}

TEST(CheckpointModel, ShapeAndVocabularyMismatchesAreNamed) {
  nn::GPTConfig a;
  nn::GPTConfig b = a;
  check_same_model(a, b, "ck.h5");
  b.n_embd = 192;
  try {
    check_same_model(a, b, "ck.h5");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model shape mismatch"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("n_embd 384 in the checkpoint vs 192 now"), std::string::npos) << e.what();
  }
  b = a;
  b.vocab_size = 70;
  try {
    check_same_model(a, b, "ck.h5");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("vocabulary mismatch"), std::string::npos) << e.what();
  }
}

TEST(CheckpointModel, StoreAndLoadModelAndMoments) {
  nn::GPTConfig c;
  c.n_layer = 1;
  c.n_head = 2;
  c.n_embd = 8;
  c.block_size = 4;
  c.vocab_size = 11;
  Generator g1(1), g2(2);
  nn::GPT a(c, g1), b(c, g2);
  AdamW opt_a(a.named_parameters(), AdamWOptions{}), opt_b(b.named_parameters(), AdamWOptions{});
  Generator gen(9);
  for (ParamState& s : opt_a.states()) {
    s.m.copy_from(Tensor::randn(s.m.shape(), gen));
    s.v.copy_from(Tensor::uniform(s.v.shape(), gen));
  }
  CheckpointData d;
  store_model(a, &opt_a, d);
  load_model(d, "mem", b, &opt_b);
  auto pa = a.named_parameters(), pb = b.named_parameters();
  for (size_t i = 0; i < pa.size(); ++i)
    EXPECT_EQ(pa[i].second.data().to_float_vector(), pb[i].second.data().to_float_vector()) << pa[i].first;
  for (size_t i = 0; i < opt_a.states().size(); ++i) {
    EXPECT_EQ(opt_a.states()[i].m.to_float_vector(), opt_b.states()[i].m.to_float_vector());
    EXPECT_EQ(opt_a.states()[i].v.to_float_vector(), opt_b.states()[i].v.to_float_vector());
  }
  d.params.pop_back();
  EXPECT_THROW(load_model(d, "mem", b, nullptr), Error);
}

}  // namespace
}  // namespace nd::train
