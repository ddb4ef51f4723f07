// ZeRO 2 and 3 with gradient accumulation over a comm that adds its reduce-scatter into the f32
// gradient shard (PeerMemory::reduce_scatter_accumulates; on the GPU PeerComm's copy engines, here the
// AccumulatingComm double over MPI): micro-batches after the first go straight into the shard, and
// the run is bit for bit the one through the plain MPI comm, whose later micro-batches land beside
// the staging buffer and are added in by the compute stream (mpirun -np 2, 3, 4; f32 and fp16 with
// f32 main gradients, grad-accum 3, active clipping): the same losses, gradient norms and final
// parameters, the double's counter proving the accumulating path ran, and no landing places.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "dist/parallel/fully_sharded_data_parallel.h"
#include "tensor/random.h"
#include "tests/dist/accumulating_comm.h"
#include "train/zero_fixture.h"
#include "train/zero_layout.h"

namespace nd::train {
namespace {

class ZeroAccumulate : public testing::ZeroFixture {
 protected:
  static constexpr int kAccumSteps = 5;

  TrainConfig config(const std::string& out, int ranks, int tp, int zero) const override {
    TrainConfig c = tiny_zero_config(out, ranks, tp, zero, /*n_layer=*/2);
    c.data.grad_accum = 3;
    c.data.batch_size = 2;
    c.schedule.max_iters = kAccumSteps;
    c.schedule.lr_decay_iters = kAccumSteps;
    c.observe.log_interval = 1;  // every step's gradient norm in metrics.jsonl
    return c;
  }

  // Rank 0's logged gradient norms, as written (9 significant digits: every bit of an f32).
  static std::vector<std::string> grad_norms(const std::string& out_dir) {
    std::vector<std::string> norms;
    std::ifstream in(out_dir + "/metrics.jsonl");
    const std::string key = "\"grad_norm\":";
    for (std::string line; std::getline(in, line);) {
      const size_t at = line.find(key);
      if (at != std::string::npos) norms.push_back(line.substr(at + key.size(), line.find(',', at) - at - key.size()));
    }
    return norms;
  }

  // The run of stage `zero` in `dtype` through the plain world comm and through the double.
  void expect_same_bits(int zero, const std::string& dtype) {
    const std::string tag = "zero" + std::to_string(zero) + "_" + dtype;
    SCOPED_TRACE(tag);
    TrainConfig c = config("landing_" + tag, comm_->size(), 1, zero);
    c.precision.dtype = parse_dtype(dtype);
    c.precision.grad_dtype = DType::F32;
    const TrainResult landing = train(c);
    test::AccumulatingComm accumulating(*comm_);
    RunContext ctx;
    ctx.comm = &accumulating;
    c.checkpoint.out_dir = root_ + "/accumulated_" + tag;
    const TrainResult accumulated = run_training(c, ctx);
    // Every step's micro-batches after the first, one reduce-scatter per bucket each.
    EXPECT_GE(accumulated.steps_done, kAccumSteps);
    EXPECT_GE(accumulating.accumulated(), kAccumSteps * 2) << "the accumulating reduce-scatter was not used";
    EXPECT_EQ(accumulated.step_losses, landing.step_losses);
    EXPECT_EQ(accumulated.params_hash, landing.params_hash);
    if (comm_->rank() == 0) {
      const std::vector<std::string> norms = grad_norms(c.checkpoint.out_dir);
      EXPECT_EQ(norms.size(), static_cast<size_t>(kAccumSteps));
      EXPECT_EQ(norms, grad_norms(root_ + "/landing_" + tag));
    }
    EXPECT_TRUE(same_everywhere(accumulated.params_hash, *comm_)) << "parameters differ between ranks";
  }
};

TEST_F(ZeroAccumulate, StageTwoF32MatchesTheLandingPathBitForBit) { expect_same_bits(2, "f32"); }

TEST_F(ZeroAccumulate, StageThreeF32MatchesTheLandingPathBitForBit) { expect_same_bits(3, "f32"); }

// fp16 parameters (emulated on the CPU) with f32 main gradients: the staging buffer is widened to f32
// before its reduce-scatter, which then adds into the shard.
TEST_F(ZeroAccumulate, StageTwoFp16MatchesTheLandingPathBitForBit) { expect_same_bits(2, "fp16"); }

TEST_F(ZeroAccumulate, StageThreeFp16MatchesTheLandingPathBitForBit) { expect_same_bits(3, "fp16"); }

// The engine allocates no landing place where the comm accumulates, and staging_bytes (what the
// memory plan prints) says so; through the plain comm each staging buffer keeps 1/dp of it beside.
TEST_F(ZeroAccumulate, NoLandingPlacesWhereTheCommAccumulates) {
  const int n = comm_->size();
  test::AccumulatingComm accumulating(*comm_);
  for (int zero : {2, 3}) {
    for (dist::Comm* comm : {static_cast<dist::Comm*>(comm_.get()), static_cast<dist::Comm*>(&accumulating)}) {
      const bool accumulates = comm == &accumulating;
      SCOPED_TRACE("zero " + std::to_string(zero) + (accumulates ? " accumulating" : " plain"));
      Generator gen(7);
      Variable w0(Tensor::randn({300, 17}, gen), true), w1(Tensor::randn({300, 17}, gen), true);
      Variable b(Tensor::randn({301}, gen), true);
      const std::vector<std::pair<std::string, Variable>> named = {
          {"b", b}, {"transformer.h.0.w", w0}, {"transformer.h.1.w", w1}};
      dist::FlatParams flat(named, DType::F32, zero_flat_options(zero, n, {-1, 0, 1}));
      dist::DataParallelOptions options;
      options.zero = zero;
      dist::FullyShardedDataParallel engine(*comm, flat, options);
      EXPECT_EQ(engine.accumulates_in_shard(), accumulates);
      const int64_t unit = flat.alignment() * n, block = (5100 + unit - 1) / unit * unit;
      const int64_t rest = (301 + unit - 1) / unit * unit, staged = 2 * block + rest;
      const int64_t gathered = zero == 3 ? (3 * block + rest) * 4 : 0;  // three blocks' parameters, b whole
      EXPECT_EQ(engine.staging_bytes(), (staged + (accumulates ? 0 : staged / n)) * 4 + gathered);
    }
  }
}

}  // namespace
}  // namespace nd::train
