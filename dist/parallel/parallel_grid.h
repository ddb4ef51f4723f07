// The parallel grid: the world's ranks laid out once in a table with named axes, tensor-parallel
// fastest, then data-parallel, then pipeline (picotron's arange(world).view(pp, dp, tp), Megatron's
// RankGenerator), so a tp group is consecutive ranks and stays inside a node. It hands out the
// group of any axis or combination of axes (the model-parallel group tp x pp for the gradient
// norm), the embedding group (first and last pipeline stage at the same tp and dp coordinates, for
// the tied embedding) and this rank's coordinates. Every group is built once, at construction
// (collective splits, in the same order on every rank), and ring-decorated (dist/comm/ring_comm.h)
// when the grid was asked for ring collectives. Nobody outside this file computes ranks or colours.
#pragma once
#include <array>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "dist/comm/comm.h"
#include "dist/comm/node_map.h"
#include "dist/comm/peer_comm.h"
#include "dist/comm/ring_allreduce.h"

namespace nd::dist {

enum class Axis { Tp, Dp, Pp };
const char* axis_name(Axis axis);  // "tp", "dp", "pp"

// Which algorithm the grid's groups use for all-reduce, reduce-scatter and all-gather (--collectives):
// the backend's own (NCCL on GPU, MPI on CPU), our ring, our ring in two levels, inside each
// node then across nodes (dist/comm/hierarchical_comm.h; reduce-scatter and all-gather stay flat), or
// the peer-memory all-reduce (dist/comm/peer_comm.h: peer = one-shot/two-shot by size, auto = one-shot,
// two-shot, ring or NCCL by a table timed at start; both are the native collectives where there is
// no peer memory, e.g. on the CPU). "native" | "ring" | "hierarchical" | "peer" | "auto"; anything
// else raises.
Algorithm parse_collectives(const std::string& name);

struct GridOptions {
  int tp = 1;
  int pp = 1;  // dp = world size / (tp x pp)
  Algorithm collectives = Algorithm::Native;
  RingOptions ring;  // the ring's options, with Algorithm::Ring and Hierarchical
  // With Algorithm::Peer and Auto (its mode is set from them; auto's decide defaults to the
  // choices timed at start, dist/comm/bench/auto_choice.h).
  PeerOptions peer;
  // Which node each world rank is on; empty: discover_nodes(world, ranks_per_node) (dist/comm/node_map.h).
  NodeMap nodes;
  int ranks_per_node = 0;
  // A tp group that spans nodes is an error unless this is set (then a warning on rank 0).
  bool allow_cross_node_tp = false;
};

class ParallelGrid {
 public:
  // Collective over `world` (every rank passes the same options; checked): raises nd::Error on
  // every rank unless tp >= 1 and pp >= 1 and tp x pp divides world.size(), and unless every tp
  // group lies inside one node (or allow_cross_node_tp). A group of one rank
  // is a LocalComm on the world's device, a group of every rank is `world` itself, any other a
  // world.split() (groups with the same members are one comm: at pp 1, the tp x pp group is the
  // tp group). `world` must outlive the grid.
  ParallelGrid(Comm& world, const GridOptions& options);
  ParallelGrid(Comm& world, int tp);  // pp 1, native collectives
  ParallelGrid(const ParallelGrid&) = delete;
  ParallelGrid& operator=(const ParallelGrid&) = delete;

  // The communicator the grid was built from, as given (host values, barriers).
  Comm& world() const { return world_; }
  // The group of the ranks that share this rank's coordinates on every axis not named: group({Tp})
  // the tensor-parallel group, group({Tp, Pp}) the model-parallel one, group({Tp, Dp, Pp}) everyone.
  // Members are in world-rank order. An empty list is this rank alone.
  Comm& group(std::initializer_list<Axis> axes) const;
  Comm& group(Axis axis) const { return group({axis}); }
  Comm& tp() const { return group(Axis::Tp); }
  Comm& dp() const { return group(Axis::Dp); }
  Comm& pp() const { return group(Axis::Pp); }
  Comm& model_parallel() const { return group({Axis::Tp, Axis::Pp}); }
  // The first and the last pipeline stage at this rank's tp and dp coordinates (in that order),
  // which hold the tied token embedding and head. At pp 1, and on middle stages, this rank alone.
  Comm& embedding() const { return *embedding_; }
  bool in_embedding_group() const { return is_first_stage() || is_last_stage(); }

  int size(Axis axis) const { return sizes_[index(axis)]; }
  int rank(Axis axis) const { return coords_[index(axis)]; }
  bool is_first_stage() const { return rank(Axis::Pp) == 0; }
  bool is_last_stage() const { return rank(Axis::Pp) == size(Axis::Pp) - 1; }
  Algorithm collectives() const { return collectives_; }
  const NodeMap& nodes() const { return nodes_; }

  int world_rank() const { return world_.rank(); }
  int world_size() const { return world_.size(); }
  int tp_rank() const { return rank(Axis::Tp); }
  int tp_size() const { return size(Axis::Tp); }
  int dp_rank() const { return rank(Axis::Dp); }
  int dp_size() const { return size(Axis::Dp); }
  int pp_rank() const { return rank(Axis::Pp); }
  int pp_size() const { return size(Axis::Pp); }

 private:
  static constexpr int kAxes = 3;
  static int index(Axis axis) { return static_cast<int>(axis); }
  // Builds the group of the axes in `mask` (bit i: axis i), or returns the one already built
  // with the same members.
  Comm* build(int mask);
  Comm* keep(std::unique_ptr<Comm> comm);

  Comm& world_;
  Algorithm collectives_;
  RingOptions ring_options_;
  PeerOptions peer_options_;
  // The grid's groups in the implementation asked for (a no-op for native, and for a comm that is
  // already decorated: a decorator's split is decorated).
  std::unique_ptr<Comm> decorate(std::unique_ptr<Comm> comm) const;
  NodeMap nodes_;
  std::array<int, kAxes> sizes_{};
  std::array<int, kAxes> coords_{};
  std::array<Comm*, 1 << kAxes> groups_{};  // by axis mask
  Comm* everyone_ = nullptr;  // the group of every rank: the world, or the world ring-decorated
  Comm* embedding_ = nullptr;
  std::vector<std::unique_ptr<Comm>> owned_;
};

}  // namespace nd::dist
