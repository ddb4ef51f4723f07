// ParallelGrid: validates tp on every rank together, then builds each group once.
#include "dist/parallel_grid.h"

#include "dist/local_comm.h"

namespace nd::dist {

namespace {

// The group of `size` ranks with this `color`, ordered by world rank: the world itself when it
// has every rank, a LocalComm when it has one, else a split (collective: every rank takes the
// same branch, since group sizes are the same on every rank).
std::unique_ptr<Comm> make_group(Comm& world, int size, int color) {
  if (size == world.size()) return nullptr;
  if (size == 1) return std::make_unique<LocalComm>(world.device());
  return world.split(color, world.rank());
}

}  // namespace

ParallelGrid::ParallelGrid(Comm& world, int tp) : world_(world) {
  // Agree first: a rank that raised alone would leave the others waiting in the split.
  int64_t range[2] = {tp, -int64_t{tp}};
  world.host_allreduce(range, 2, HostReduce::Max);
  ND_CHECK(range[0] == -range[1], "ranks pass different tensor-parallel sizes (from " << -range[1] << " to "
                                                                                     << range[0] << "; this rank "
                                                                                     << tp << ")");
  const int n = world.size(), w = world.rank();
  ND_CHECK(tp >= 1, "the tensor-parallel size must be >= 1, got " << tp);
  ND_CHECK(n % tp == 0, "the tensor-parallel size " << tp << " does not divide the world size " << n);
  owned_tp_ = make_group(world, tp, w / tp);
  owned_dp_ = make_group(world, n / tp, w % tp);
  tp_ = owned_tp_ ? owned_tp_.get() : &world;
  dp_ = owned_dp_ ? owned_dp_.get() : &world;
}

}  // namespace nd::dist
