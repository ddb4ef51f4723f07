// The precision bookkeeping agreed over ranks (mpirun -np 2, 3, 4): one rank's overflow makes every
// rank skip and back off the loss scale (train/loss_scaler.h); a tensor sharded over the group
// gets the max of the ranks' amaxes and so one scale everywhere, a replicated one keeps its own
// (nn/fp8_scaling.h) unless the data-parallel replicas reduce it too.
#include <gtest/gtest.h>

#include "dist/comm/world.h"
#include "dist/parallel/parallelize.h"
#include "nn/fp8_scaling.h"
#include "train/loss_scaler.h"

namespace nd::train {
namespace {

TEST(PrecisionMpi, OneRanksOverflowSkipsTheStepEverywhere) {
  auto world = dist::make_world_comm(Device::cpu());
  const int n = world->size();
  LossScalerOptions o;
  o.growth_interval = 2;
  LossScaler s(o);
  EXPECT_FALSE(s.update(false, world.get()));
  // Step 2: only the last rank overflows; every rank must skip and halve.
  EXPECT_TRUE(s.update(world->rank() == n - 1, world.get()));
  EXPECT_EQ(s.scale(), 32768.0);
  EXPECT_EQ(s.state().skipped_steps, 1);
  EXPECT_FALSE(s.update(false, world.get()));
  EXPECT_FALSE(s.update(false, world.get()));
  EXPECT_EQ(s.scale(), 65536.0);  // two finite steps after the skip
}

TEST(PrecisionMpi, ShardedAmaxIsTheMaxOverTheGroup) {
  auto world = dist::make_world_comm(Device::cpu());
  const int r = world->rank(), n = world->size();
  nn::DelayedScaling ds;
  const int sharded = ds.add("fc.weight", Fp8Format::E4M3, true);
  const int replicated = ds.add("ln.x", Fp8Format::E4M3, false);
  ds.record_amax(sharded, static_cast<float>(r + 1));
  ds.record_amax(replicated, static_cast<float>(r + 1));
  ds.update(dist::max_over(world.get()));
  EXPECT_EQ(ds.tensor(sharded).scale, static_cast<float>(448.0 / n));
  EXPECT_EQ(ds.tensor(replicated).scale, static_cast<float>(448.0 / (r + 1)));
  // A NaN on one rank's shard is agreed as non-finite: no rank's history takes the step.
  ds.record_amax(sharded, r == 0 ? NAN : 1.0f);
  ds.update(dist::max_over(world.get()));
  EXPECT_EQ(ds.tensor(sharded).history.count(), 1);
}

// Data-parallel replicas agree on every tensor's amax (the max over them), so on one history and
// one scale, which is what a checkpoint keeps one copy of.
TEST(PrecisionMpi, ReplicasAgreeOnEveryAmax) {
  auto world = dist::make_world_comm(Device::cpu());
  const int r = world->rank(), n = world->size();
  nn::DelayedScaling ds;
  const int x = ds.add("fc.x", Fp8Format::E4M3, false);
  const int dout = ds.add("fc.dout", Fp8Format::E5M2, false);
  ds.record_amax(x, static_cast<float>(r + 1));
  ds.record_amax(dout, static_cast<float>(n - r));
  ds.update(nullptr, dist::max_over(world.get()));
  EXPECT_EQ(ds.tensor(x).scale, static_cast<float>(448.0 / n));
  EXPECT_EQ(ds.tensor(dout).scale, static_cast<float>(57344.0 / n));
  EXPECT_EQ(ds.tensor(x).history.oldest_first(), std::vector<float>{static_cast<float>(n)});
  ds.record_amax(x, r == n - 1 ? NAN : 1.0f);  // one replica's overflow keeps the step out of every history
  ds.record_amax(dout, 1.0f);
  ds.update(nullptr, dist::max_over(world.get()));
  EXPECT_EQ(ds.tensor(x).history.count(), 1);
  EXPECT_EQ(ds.tensor(dout).history.count(), 2);
}

}  // namespace
}  // namespace nd::train
