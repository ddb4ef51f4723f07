// --init-from, in-process: the safetensors and JSON readers against bytes written here by hand;
// a Hugging Face GPT-2 directory that this test builds offline from a trained checkpoint (GPT-2's
// names without "transformer.", Conv1D weights transposed, the tied lm_head and a causal-mask
// buffer beside them, as published GPT-2 files have) loads into bit-identical weights and the
// same first-step loss as the checkpoint itself; a cut context, the tokenizer and vocabulary
// checks, and prepare --tokenizer-from.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "train/ckpt/checkpoint.h"
#include "train/ckpt/init_from.h"
#include "data/json_value.h"
#include "train/ckpt/safetensors.h"
#include "train/hugging_face_dir.h"
#include "train/trainer.h"
#include "train_fixture.h"

namespace nd::train {
namespace {

using testing::TempDir;

using testing::f32_bytes;
using testing::write_safetensors;

TEST(Safetensors, ReadsF32F16Bf16AsWritten) {
  TempDir dir;
  // 1.5 = f16 0x3E00 = bf16 0x3FC0; -2 = f16 0xC000; 2^-24 = the smallest f16 subnormal (0x0001).
  write_safetensors(dir / "t.safetensors",
                    {{"a", "F32", {2, 2}, f32_bytes({1.0f, -2.5f, 3.25f, 1e-20f})},
                     {"h", "F16", {3}, std::string("\x00\x3E\x00\xC0\x01\x00", 6)},
                     {"b", "BF16", {1}, std::string("\xC0\x3F", 2)}});
  auto tensors = read_safetensors(dir / "t.safetensors");
  ASSERT_EQ(tensors.size(), 3u);
  EXPECT_EQ(tensors[0].first, "a");
  EXPECT_EQ(tensors[0].second.shape(), (Shape{2, 2}));
  EXPECT_EQ(tensors[0].second.data<float>()[3], 1e-20f);
  EXPECT_EQ(tensors[1].first, "h");
  EXPECT_EQ(tensors[1].second.data<float>()[0], 1.5f);
  EXPECT_EQ(tensors[1].second.data<float>()[1], -2.0f);
  EXPECT_EQ(tensors[1].second.data<float>()[2], std::ldexp(1.0f, -24));
  EXPECT_EQ(tensors[2].second.data<float>()[0], 1.5f);

  write_safetensors(dir / "bad.safetensors", {{"a", "F32", {3}, f32_bytes({1.0f, 2.0f})}});
  try {
    read_safetensors(dir / "bad.safetensors");
    FAIL() << "a size that does not match the shape was read";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_input());
    EXPECT_NE(e.message().find("holds 8 bytes"), std::string::npos) << e.message();
  }
  write_safetensors(dir / "i64.safetensors", {{"a", "I64", {1}, std::string(8, '\0')}});
  EXPECT_THROW(read_safetensors(dir / "i64.safetensors"), Error);
  std::ofstream(dir / "short.safetensors") << "abc";
  EXPECT_THROW(read_safetensors(dir / "short.safetensors"), Error);
}

TEST(Json, ValuesEscapesAndErrors) {
  JsonValue v = parse_json(R"({"a": [1, -2.5e3, true, null], "s": "\u00e9\ud83d\ude00\n\"x\"", "o": {}})", "t");
  EXPECT_EQ(v.find("a")->items.size(), 4u);
  EXPECT_EQ(v.find("a")->items[0].as_int("a"), 1);
  EXPECT_EQ(v.find("a")->items[1].as_double("a"), -2500.0);
  EXPECT_TRUE(v.find("a")->items[2].boolean);
  EXPECT_EQ(v.find("s")->text, "\xc3\xa9\xf0\x9f\x98\x80\n\"x\"");
  EXPECT_EQ(v.find("o")->kind, JsonValue::Kind::Object);
  EXPECT_EQ(v.find("missing"), nullptr);
  EXPECT_THROW(parse_json("{\"a\": }", "t"), Error);
  EXPECT_THROW(parse_json("[1, 2", "t"), Error);
  EXPECT_THROW(parse_json("{} x", "t"), Error);
}

class InitFrom : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::write_tiny_data(dir / "data");
    TrainConfig c = testing::tiny_config(dir / "data", dir / "base");
    c.schedule.max_iters = 10;
    ckpt = run_training(c).last_checkpoint;
    ASSERT_FALSE(ckpt.empty());
  }
  // One step (or none) from `source` into OUT.
  TrainResult start_from(const std::string& source, const std::string& out, int steps, int block = 16) {
    TrainConfig c = testing::tiny_config(dir / "data", dir / out);
    c.checkpoint.init_from = source;
    c.schedule.max_iters = steps;
    c.model.block_size = block;
    c.debug.seed = 99;  // another seed than the source's: the weights must come from the source
    return run_training(c);
  }
  TempDir dir;
  std::string ckpt;
};

TEST_F(InitFrom, HuggingFaceGpt2LoadsTheSameModelAsItsCheckpoint) {
  testing::export_as_gpt2(ckpt, dir / "hf");
  ASSERT_TRUE(is_hugging_face_dir(dir / "hf"));
  const InitSource source = describe_init_source(dir / "hf");
  EXPECT_TRUE(source.hugging_face);
  EXPECT_EQ(source.model.n_embd, 16);
  EXPECT_EQ(source.model.block_size, 16);

  // Zero steps: the weights as loaded, bit for bit.
  const TrainResult from_ckpt = start_from(ckpt, "zero_ckpt", 0);
  const TrainResult from_hf = start_from(dir / "hf", "zero_hf", 0);
  EXPECT_EQ(from_hf.params_hash, from_ckpt.params_hash);
  EXPECT_EQ(read_checkpoint(newest_checkpoint(dir / "zero_hf")).params.size(), read_checkpoint(ckpt).params.size());

  // The first step's loss is the exported model's loss on the first batch: equal either way.
  const TrainResult one_ckpt = start_from(ckpt, "one_ckpt", 1);
  const TrainResult one_hf = start_from(dir / "hf", "one_hf", 1);
  ASSERT_EQ(one_hf.step_losses.size(), 1u);
  EXPECT_EQ(one_hf.step_losses[0], one_ckpt.step_losses[0]);
  EXPECT_EQ(one_hf.first_step, 0);
  // Trained for 10 steps, the source is far below a fresh model's ln(vocab).
  const TrainResult fresh = [&] {
    TrainConfig c = testing::tiny_config(dir / "data", dir / "fresh");
    c.schedule.max_iters = 1;
    c.debug.seed = 99;
    return run_training(c);
  }();
  EXPECT_LT(one_hf.step_losses[0], fresh.step_losses[0]);
}

TEST_F(InitFrom, ShorterContextTokenizerAndVocabularyChecks) {
  // A context of 8 of the source's 16 positions: the position embedding is cut.
  const TrainResult cut = start_from(ckpt, "cut", 1, 8);
  EXPECT_EQ(cut.step_losses.size(), 1u);
  try {
    start_from(ckpt, "long", 1, 32);
    FAIL() << "a context beyond the source's positions was accepted";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("positions for 16"), std::string::npos) << e.message();
  }

  // Data tokenized with another tokenizer: refused, naming prepare --tokenizer-from.
  PrepareOptions other;
  other.out_dir = dir / "other";
  other.val_fraction = 0.2;
  prepare_text(testing::tiny_text(3000) + "XYZ!", "other", other);
  TrainConfig c = testing::tiny_config(dir / "other", dir / "o");
  c.checkpoint.init_from = ckpt;
  try {
    run_training(c);
    FAIL() << "data of another tokenizer were accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_input());
    EXPECT_NE(e.message().find("--tokenizer-from"), std::string::npos) << e.message();
  }

  // The same new text with the checkpoint's tokenizer trains from it.
  PrepareOptions same;
  same.out_dir = dir / "same";
  same.val_fraction = 0.2;
  same.tokenizer_text = tokenizer_text_of(dir / "base");
  same.tokenizer_source = dir / "base";
  prepare_text(testing::tiny_text(2000), "new", same);
  c = testing::tiny_config(dir / "same", dir / "s");
  c.checkpoint.init_from = dir / "base";
  c.schedule.max_iters = 1;
  EXPECT_EQ(run_training(c).step_losses.size(), 1u);

  EXPECT_THROW(describe_init_source(dir / "nothing"), Error);
  std::filesystem::create_directories(dir / "empty");
  EXPECT_THROW(describe_init_source(dir / "empty"), Error);
}

TEST_F(InitFrom, ShapeComesFromTheSource) {
  const InitSource source = describe_init_source(ckpt);
  TrainConfig c;
  take_model_shape(c, source, [](const std::string&) { return false; });
  EXPECT_EQ(c.model.n_layer, 2);
  EXPECT_EQ(c.model.n_embd, 16);
  EXPECT_EQ(c.model.block_size, 16);
  c.model.n_layer = 3;
  try {
    take_model_shape(c, source, [](const std::string& flag) { return flag == "n-layer"; });
    FAIL() << "a conflicting --n-layer was accepted";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("--n-layer 3 but --init-from"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace nd::train
