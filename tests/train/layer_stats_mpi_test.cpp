// Per-layer statistics are those of the model, not of a rank: data parallelism (np ranks, the
// batch split), also under ZeRO 1, 2 and 3 (each rank adds its pieces), and tensor parallelism
// (tp 2, sums over the group) write the statistics of one rank running the whole batch alone
// (relative 1e-4: f32, sums in another order).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>

#include "data/json_value.h"
#include "train/mpi_data_fixture.h"

namespace nd::train {
namespace {

constexpr int kGlobalBatch = 4;  // <= kProbeRows: every rank's probe covers all its rows

using Flat = std::map<std::string, double>;

void flatten(const JsonValue& v, const std::string& path, Flat& out) {
  if (v.kind == JsonValue::Kind::Number) out[path] = v.as_double(path);
  if (v.kind == JsonValue::Kind::Null) out[path] = NAN;
  for (size_t i = 0; i < v.items.size(); ++i) flatten(v.items[i], path + "[" + std::to_string(i) + "]", out);
  for (const auto& [key, member] : v.members) flatten(member, path + "." + key, out);
}

// Every layer_stats line of OUT/metrics.jsonl, flattened to path -> value.
Flat read_stats(const std::string& out_dir) {
  std::ifstream in(out_dir + "/metrics.jsonl");
  Flat all;
  for (std::string line; std::getline(in, line);) {
    JsonValue v = parse_json(line, "metrics.jsonl");
    if (!v.find("layer_stats")) continue;
    flatten(*v.find("layer_stats"), "step" + std::to_string(v.find("step")->as_int("step")), all);
  }
  return all;
}

class LayerStatsMpiTest : public testing::MpiDataTest {
 protected:
  TrainConfig config(const std::string& out, int dp, int tp, int zero = 0) const {
    TrainConfig c = testing::tiny_config(root_ + "/data", root_ + "/" + out);
    c.model.n_head = 4;
    c.model.n_embd = 32;
    c.parallel.tp = tp;
    c.parallel.zero = zero;
    c.data.batch_size = kGlobalBatch / dp;
    c.schedule.max_iters = 4;
    c.observe.layer_stats = 2;
    c.observe.log_interval = 1000;
    c.parallel.bucket_mb = 0.01;
    return c;
  }

  void expect_same_as_one_rank(int tp, int zero = 0) {
    const int np = comm_->size();
    if (np != 2 && np != 4) GTEST_SKIP() << "the global batch of 4 splits over 2 or 4 ranks";
    const std::string one = "one_rank_" + std::to_string(comm_->rank());
    TrainConfig reference = config(one, 1, 1);
    reference.checkpoint.overwrite = true;  // a test may compare several runs with it
    run_training(reference);
    const std::string many = "np" + std::to_string(np) + "_tp" + std::to_string(tp) + "_zero" + std::to_string(zero);
    RunContext context;
    context.comm = comm_.get();
    run_training(config(many, np / tp, tp, zero), context);
    if (comm_->rank() != 0) return;
    Flat want = read_stats(root_ + "/" + one), got = read_stats(root_ + "/" + many);
    ASSERT_EQ(got.size(), want.size());
    ASSERT_GT(want.size(), 100u);
    for (const auto& [path, w] : want) {
      ASSERT_TRUE(got.count(path)) << path;
      // The key bias's gradient is zero in exact arithmetic (a softmax does not change when every
      // score of a row moves by the same q.b_k): its values are rounding noise, and which of them
      // fall below fp16's 2^-25 depends on the order of the sums.
      if (path.find("c_attn.bias.grad_underflow") != std::string::npos) continue;
      const double g = got.at(path);
      if (std::isnan(w)) {
        EXPECT_TRUE(std::isnan(g)) << path;
        continue;
      }
      EXPECT_NEAR(g, w, 1e-4 * std::abs(w) + 1e-7) << path << " at np " << np << ", tp " << tp << ", zero " << zero;
    }
  }
};

TEST_F(LayerStatsMpiTest, DataParallelEqualsOneRank) { expect_same_as_one_rank(1); }

TEST_F(LayerStatsMpiTest, TensorParallelEqualsOneRank) { expect_same_as_one_rank(2); }

// Under ZeRO each rank adds its pieces of the reduced gradients (the owned slices of the flat
// gradients at stage 1, the gradient shard at 2 and 3) and of the weights the update writes (at 3
// the parameter shard); the sums over the ranks are the unsharded run's. At np 4 also under tp 2.
TEST_F(LayerStatsMpiTest, ZeroStagesEqualOneRank) {
  for (int zero : {1, 2, 3}) {
    SCOPED_TRACE("zero " + std::to_string(zero));
    expect_same_as_one_rank(1, zero);
    if (comm_->size() == 4) expect_same_as_one_rank(2, zero);
  }
}

}  // namespace
}  // namespace nd::train
