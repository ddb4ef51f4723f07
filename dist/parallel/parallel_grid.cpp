// ParallelGrid: agrees on the shape on every rank together, lays the ranks out in one table
// (tp fastest, then dp, then pp) and builds each distinct group once, in the same order everywhere.
#include "dist/parallel/parallel_grid.h"

#include <iostream>

#include "dist/comm/bench/auto_choice.h"
#include "dist/comm/hierarchical_comm.h"
#include "dist/comm/local_comm.h"
#include "dist/comm/ring_comm.h"

namespace nd::dist {

namespace {

// The table's order: the first axis varies fastest with the world rank.
constexpr Axis kOrder[] = {Axis::Tp, Axis::Dp, Axis::Pp};

// Raises on every rank unless all pass the same value (one small host reduction for all values).
void agree(Comm& world, const int64_t (&values)[3]) {
  const std::vector<RankRange> range = ranges_over_ranks(world, {values[0], values[1], values[2]});
  ND_CHECK(range[0].same(), "ranks pass different tensor-parallel sizes (from " << range[0].min << " to " << range[0].max
                                                                               << "; this rank " << values[0] << ")");
  ND_CHECK(range[1].same(), "ranks pass different pipeline-parallel sizes (from " << range[1].min << " to "
                                                                                 << range[1].max << "; this rank "
                                                                                 << values[1] << ")");
  ND_CHECK(range[2].same(), "ranks pass different collectives or --allow-cross-node-tp (this rank "
                        << algorithm_name(static_cast<Algorithm>(values[2] / 2)) << ", "
                        << (values[2] % 2 ? "allowed" : "not allowed") << ")");
}

}  // namespace

const char* axis_name(Axis axis) {
  switch (axis) {
    case Axis::Tp: return "tp";
    case Axis::Dp: return "dp";
    case Axis::Pp: return "pp";
  }
  return "?";
}

Algorithm parse_collectives(const std::string& name) {
  const bool known = name == "native" || name == "ring" || name == "hierarchical" || name == "peer" || name == "auto";
  ND_CHECK(known, "unknown collectives '" << name << "' (expected native, ring, hierarchical, peer or auto)");
  return parse_algorithm(name);
}

ParallelGrid::ParallelGrid(Comm& world, const GridOptions& options)
    : world_(world), collectives_(options.collectives), ring_options_(options.ring), peer_options_(options.peer) {
  parse_collectives(algorithm_name(collectives_));  // one of the five the grid hands out
  if (collectives_ == Algorithm::Peer || collectives_ == Algorithm::Auto) peer_options_.mode = collectives_;
  if (collectives_ == Algorithm::Auto && !peer_options_.decide) peer_options_.decide = auto_decider();
  // Agree first: a rank that raised alone would leave the others waiting in a split.
  agree(world, {options.tp, options.pp,
                static_cast<int64_t>(options.collectives) * 2 + (options.allow_cross_node_tp ? 1 : 0)});
  const int n = world.size(), w = world.rank(), tp = options.tp, pp = options.pp;
  ND_CHECK(tp >= 1, "the tensor-parallel size must be >= 1, got " << tp);
  ND_CHECK(pp >= 1, "the pipeline-parallel size must be >= 1, got " << pp);
  const int64_t model = int64_t{tp} * pp;
  if (pp == 1) {
    ND_CHECK(n % tp == 0, "the tensor-parallel size " << tp << " does not divide the world size " << n);
  } else {
    ND_CHECK(n % model == 0, "the tensor-parallel size " << tp << " x pipeline-parallel size " << pp << " = " << model
                                                         << " does not divide the world size " << n);
  }
  // Every rank holds the same map (discovered together or passed alike), so all raise together.
  nodes_ = options.nodes.node_of_rank.empty() ? discover_nodes(world, options.ranks_per_node) : options.nodes;
  ND_CHECK(static_cast<int>(nodes_.node_of_rank.size()) == n,
           "the node map covers " << nodes_.node_of_rank.size() << " ranks, the world " << n);
  const std::string crossing = tp_crossing_nodes(nodes_, tp);
  if (!crossing.empty()) {
    ND_CHECK_INPUT(options.allow_cross_node_tp, crossing << "; or pass --allow-cross-node-tp to run it anyway");
    if (w == 0) std::cerr << "nanodist: warning: " << crossing << " (allowed by --allow-cross-node-tp; its all-reduces cross the network every layer)" << std::endl;
  }
  sizes_[index(Axis::Tp)] = tp;
  sizes_[index(Axis::Pp)] = pp;
  sizes_[index(Axis::Dp)] = static_cast<int>(n / model);
  int stride = 1;
  for (Axis axis : kOrder) {
    coords_[index(axis)] = w / stride % size(axis);
    stride *= size(axis);
  }

  groups_[0] = keep(std::make_unique<LocalComm>(world.device()));
  for (int mask = 1; mask < (1 << kAxes); ++mask) groups_[mask] = build(mask);

  // First and last stage at this (tp, dp): at pp 2 that is the pp group; at pp 1 this rank.
  if (pp == 1) {
    embedding_ = groups_[0];
  } else if (pp == 2) {
    embedding_ = &group(Axis::Pp);
  } else {
    const int across = size(Axis::Tp) * size(Axis::Dp);
    const int color = in_embedding_group() ? rank(Axis::Tp) + size(Axis::Tp) * rank(Axis::Dp) : across + w;
    std::unique_ptr<Comm> split = world.split(color, w);
    embedding_ = in_embedding_group() ? keep(std::move(split)) : groups_[0];
  }
}

namespace {
GridOptions tensor_parallel_only(int tp) {
  GridOptions options;
  options.tp = tp;
  return options;
}
}  // namespace

ParallelGrid::ParallelGrid(Comm& world, int tp) : ParallelGrid(world, tensor_parallel_only(tp)) {}

Comm& ParallelGrid::group(std::initializer_list<Axis> axes) const {
  int mask = 0;
  for (Axis axis : axes) mask |= 1 << index(axis);
  return *groups_[mask];
}

Comm* ParallelGrid::build(int mask) {
  // Axes of size 1 change no membership: the group is the one of the axes of size > 1.
  int spread = 0;
  for (Axis axis : kOrder)
    if (size(axis) > 1) spread |= 1 << index(axis);
  const int members = mask & spread;
  if (members == spread) {  // everyone: the world itself (built once)
    if (everyone_ == nullptr) {
      if (collectives_ == Algorithm::Native || world_.size() == 1) {
        everyone_ = &world_;
      } else if (collectives_ == Algorithm::Ring) {
        everyone_ = keep(std::make_unique<RingComm>(world_, ring_options_));
      } else if (collectives_ == Algorithm::Hierarchical) {
        everyone_ = keep(std::make_unique<HierarchicalComm>(world_, nodes_.node(world_.rank()), ring_options_));
      } else {
        everyone_ = keep(std::make_unique<PeerComm>(world_, peer_options_));
      }
    }
    return everyone_;
  }
  if (members != mask) return groups_[members];  // built earlier: members < mask
  // The colour numbers the coordinates on the axes outside the group; the key keeps world order.
  int color = 0, radix = 1;
  for (Axis axis : kOrder) {
    if (mask & (1 << index(axis))) continue;
    color += rank(axis) * radix;
    radix *= size(axis);
  }
  return keep(world_.split(color, world_.rank()));
}

std::unique_ptr<Comm> ParallelGrid::decorate(std::unique_ptr<Comm> comm) const {
  if (collectives_ == Algorithm::Native || comm->size() == 1) return comm;
  if (dynamic_cast<RingComm*>(comm.get()) || dynamic_cast<PeerComm*>(comm.get())) return comm;
  switch (collectives_) {
    case Algorithm::Ring: return std::make_unique<RingComm>(std::move(comm), ring_options_);
    case Algorithm::Hierarchical:
      return std::make_unique<HierarchicalComm>(std::move(comm), nodes_.node(world_.rank()), ring_options_);
    case Algorithm::Peer:
    case Algorithm::Auto: return std::make_unique<PeerComm>(std::move(comm), peer_options_);
    default: break;
  }
  return comm;
}

Comm* ParallelGrid::keep(std::unique_ptr<Comm> comm) {
  owned_.push_back(decorate(std::move(comm)));
  return owned_.back().get();
}

}  // namespace nd::dist
