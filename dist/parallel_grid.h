// The parallel grid: the world communicator cut once, at start, into tensor-parallel groups of
// `tp` consecutive ranks (so a tp group stays inside a node) and data-parallel groups that
// stride by tp. Each rank belongs to one of each; DDP receives dp(), tensor-parallel layers
// tp(). World rank w sits at tp rank w % tp of tp group w / tp, and at dp rank w / tp of dp
// group w % tp; nobody outside this file recomputes that.
#pragma once
#include <memory>

#include "dist/comm.h"

namespace nd::dist {

class ParallelGrid {
 public:
  // Collective over `world` (every rank passes the same tp; checked): raises nd::Error on every
  // rank unless tp >= 1 divides world.size(). A group of one rank is a LocalComm on the world's
  // device, a group of every rank is `world` itself, any other group a world.split(); so at
  // tp = 1 dp() is world and tp() a one-rank comm, and nothing is split. `world` must outlive
  // the grid.
  ParallelGrid(Comm& world, int tp);
  ParallelGrid(const ParallelGrid&) = delete;
  ParallelGrid& operator=(const ParallelGrid&) = delete;

  Comm& world() const { return world_; }
  Comm& dp() const { return *dp_; }
  Comm& tp() const { return *tp_; }

  int world_rank() const { return world_.rank(); }
  int world_size() const { return world_.size(); }
  int dp_rank() const { return dp_->rank(); }
  int dp_size() const { return dp_->size(); }
  int tp_rank() const { return tp_->rank(); }
  int tp_size() const { return tp_->size(); }

 private:
  Comm& world_;
  std::unique_ptr<Comm> owned_dp_, owned_tp_;  // empty where the group is the world itself
  Comm* dp_ = nullptr;
  Comm* tp_ = nullptr;
};

}  // namespace nd::dist
