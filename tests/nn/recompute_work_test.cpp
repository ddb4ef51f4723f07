// The work of a recomputed block's rerun, counted by the op timer's timeline on the CPU: the rerun
// repeats the block's forward up to the MLP's c_fc and GELU, but not c_proj's product (a third of
// the block's forward FLOPs), the MLP dropout nor the second residual add, whose values backward
// does not read; backward itself runs the same ops as without recomputation. With and without the
// residual connections.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "nn/gpt.h"
#include "tensor/op_trace.h"
#include "tests/nn/tp_test_util.h"

namespace nd::nn {
namespace {

constexpr int kLayers = 3, kEmbd = 32, kBatch = 2, kTime = 16;

// Calls of every op region (name and detail, e.g. "linear 32->96") in one forward and backward.
std::map<std::string, int> ops_of_a_step(Recompute recompute, bool residual) {
  GPTConfig c;
  c.n_layer = kLayers;
  c.n_head = 4;
  c.n_embd = kEmbd;
  c.block_size = kTime;
  c.vocab_size = 29;
  c.dropout = 0.1f;
  c.use_residual = residual;
  c.recompute = recompute;
  Generator init(7), dropout_gen(99);
  GPT model(c, init);
  Tensor idx = test::random_ids({kBatch, kTime}, c.vocab_size, 1);
  Tensor targets = test::random_ids({kBatch, kTime}, c.vocab_size, 2);
  op_timer::start_trace(-1);
  model.forward(idx, &targets, dropout_gen).loss.backward();
  op_timer::stop_trace();
  std::map<std::string, int> calls;
  for (const op_timer::TraceEvent& e : op_timer::take_trace()) ++calls[e.name];
  return calls;
}

// What block recomputation adds to a step, op by op (never less than none: checked).
std::map<std::string, int> rerun_ops(bool residual) {
  const std::map<std::string, int> none = ops_of_a_step(Recompute::None, residual);
  std::map<std::string, int> block = ops_of_a_step(Recompute::Block, residual);
  for (const auto& [name, n] : none) {
    EXPECT_GE(block[name], n) << name;
    block[name] -= n;
  }
  return block;
}

int calls(const std::map<std::string, int>& ops, const std::string& name) {
  auto it = ops.find(name);
  return it == ops.end() ? 0 : it->second;
}

const std::string kActivation = shape_str({kBatch, kTime, kEmbd});
const std::string kQkv = std::to_string(kEmbd) + "->" + std::to_string(3 * kEmbd);
const std::string kAttnProj = std::to_string(kEmbd) + "->" + std::to_string(kEmbd);
const std::string kFc = std::to_string(kEmbd) + "->" + std::to_string(4 * kEmbd);

// Nothing of backward is repeated: every extra region is a forward one.
void expect_no_extra_backward(const std::map<std::string, int>& extra) {
  for (const auto& [name, n] : extra)
    if (n > 0) {
      EXPECT_EQ(name.find("backward"), std::string::npos) << name << " ran " << n << " more times";
    }
}

TEST(RecomputeWork, TheRerunSkipsTheMlpProjectionItsDropoutAndTheResidualAdd) {
  for (bool residual : {true, false}) {
    SCOPED_TRACE(residual ? "residual" : "no residual");
    const std::map<std::string, int> extra = rerun_ops(residual);
    EXPECT_EQ(calls(extra, "gelu_mlp " + kFc), kLayers) << "c_fc and the GELU only";
    EXPECT_EQ(calls(extra, "gelu_mlp " + kFc + "->" + std::to_string(kEmbd)), 0) << "the rerun ran c_proj";
    EXPECT_EQ(calls(extra, "linear " + kQkv), kLayers);
    EXPECT_EQ(calls(extra, "linear " + kAttnProj), kLayers);
    // The attention's residual dropout is rerun (ln_2 reads h); the MLP's is not.
    EXPECT_EQ(calls(extra, "dropout " + kActivation), kLayers);
    EXPECT_EQ(calls(extra, "add " + kActivation), residual ? kLayers : 0);
    expect_no_extra_backward(extra);
  }
}

}  // namespace
}  // namespace nd::nn
