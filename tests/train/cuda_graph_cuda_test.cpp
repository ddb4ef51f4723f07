// --cuda-graph: the GPU step captured once and replayed gives bit-identical losses, evals and
// final parameters to the same step run eagerly (same kernels in the same order), with gradient
// accumulation, in f32 and bf16, also with dropout (each replay reads the step's Philox counter
// from device memory, so it draws the eager step's masks), with our attention kernel and with
// cuDNN's (whose backward must then be deterministic too); replays call no cudaMalloc. The step's
// loss writes the logits' gradient in its forward, reading the 1/grad_accum seed from device
// memory, so a replay scales as the eager step does.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "autograd/ops.h"
#include "kernels/cudnn/attention_cudnn.h"
#include "train/train_fixture.h"
#include "train/trainer.h"

namespace nd::train {
namespace {

class CudaGraphTraining : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no GPU";
    testing::write_tiny_data(dir_ / "data");
  }

  TrainConfig config(const std::string& out, const std::string& dtype, bool graph) {
    TrainConfig c = testing::tiny_config(dir_ / "data", dir_ / out);
    c.parallel.device = Device::cuda();
    c.precision.dtype = parse_dtype(dtype);
    c.debug.cuda_graph = graph;
    c.data.grad_accum = 2;
    c.schedule.eval_interval = 5;  // evals between replays must not disturb the graph's memory
    c.optim.grad_clip = 0.5;    // small enough that clipping acts on some steps
    return c;
  }

  void expect_identical(const std::string& dtype, double dropout = 0.0, const std::string& attention = "ours") {
    const std::string tag = dtype + (dropout > 0 ? "_dropout_" : "_") + attention;
    TrainConfig eager_config = config("eager_" + tag, dtype, false), graph_config = config("graph_" + tag, dtype, true);
    eager_config.model.dropout = graph_config.model.dropout = dropout;
    eager_config.model.attention = graph_config.model.attention = parse_attention_backend(attention);
    TrainResult eager = run_training(eager_config);
    std::ostringstream log;
    RunContext ctx;
    ctx.log = &log;
    TrainResult graph = run_training(graph_config, ctx);
    ASSERT_EQ(eager.step_losses.size(), 20u);
    ASSERT_EQ(graph.step_losses.size(), 20u);
    for (size_t i = 0; i < 20; ++i)
      EXPECT_EQ(graph.step_losses[i], eager.step_losses[i]) << dtype << " step " << i + 1;
    EXPECT_EQ(graph.params_hash, eager.params_hash) << dtype << ": final parameters differ";
    EXPECT_EQ(graph.last_val_loss, eager.last_val_loss);
    EXPECT_EQ(graph.best_val_loss, eager.best_val_loss);
    EXPECT_EQ(eager.cuda_graph_replays, 0);
    // Three eager steps, the captured one, then replays.
    EXPECT_EQ(graph.cuda_graph_replays, 16) << log.str();
    EXPECT_EQ(graph.replay_cuda_mallocs, 0);
    EXPECT_NE(log.str().find("cuda graph: captured"), std::string::npos) << log.str();
    EXPECT_LT(graph.step_losses.back(), graph.step_losses.front());
  }

  testing::TempDir dir_;
};

TEST_F(CudaGraphTraining, F32ReplaysMatchEagerBitwise) { expect_identical("f32"); }

TEST_F(CudaGraphTraining, Bf16ReplaysMatchEagerBitwise) { expect_identical("bf16"); }

// The eager run draws new masks every step; the replays must draw the very same ones.
TEST_F(CudaGraphTraining, DropoutReplaysMatchEagerBitwise) { expect_identical("f32", 0.1); }

TEST_F(CudaGraphTraining, Bf16DropoutReplaysMatchEagerBitwise) { expect_identical("bf16", 0.2); }

// cuDNN's fused attention (the default on GPUs that have it): its backward repeats bit for bit, and
// with dropout its masks follow the step's device-resident Philox counter.
TEST_F(CudaGraphTraining, Bf16CudnnAttentionReplaysMatchEagerBitwise) {
  std::string why;
  if (!cudnn::attention_available(&why)) GTEST_SKIP() << why;
  expect_identical("bf16", 0.0, "cudnn");
}

TEST_F(CudaGraphTraining, Bf16CudnnDropoutReplaysMatchEagerBitwise) {
  std::string why;
  if (!cudnn::attention_available(&why)) GTEST_SKIP() << why;
  expect_identical("bf16", 0.2, "cudnn");
}

// Direct callers still get an nd::Error for an id outside the vocabulary on the GPU: the op records
// it on the device (no host sync, so it stays capturable) and check_recorded_token_ids raises it.
TEST_F(CudaGraphTraining, EmbeddingStillRejectsBadIds) {
  Device gpu = Device::cuda(0);
  Variable wte(Tensor::zeros({5, 4}, DType::F32, gpu), false), wpe(Tensor::zeros({3, 4}, DType::F32, gpu), false);
  Tensor bad = Tensor::full(Shape{1, 3}, 7.0, DType::I32, Device::cpu()).to(gpu);
  EXPECT_THROW(
      {
        ops::embedding(bad, wte, wpe);
        ops::check_recorded_token_ids(gpu);
      },
      Error);
  Tensor good = Tensor::full(Shape{1, 3}, 4.0, DType::I32, Device::cpu()).to(gpu);
  EXPECT_EQ(ops::embedding(good, wte, wpe).shape(), (Shape{1, 3, 4}));
  EXPECT_NO_THROW(ops::check_recorded_token_ids(gpu));  // the record was cleared by the raise
}

}  // namespace
}  // namespace nd::train
