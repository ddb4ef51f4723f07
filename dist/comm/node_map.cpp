// NodeMap: the layout of consecutive ranks asked for, or the real one from MPI's shared-memory split, exchanged so every rank holds the whole map; and the sentences the grid and the header use.
#include "dist/comm/node_map.h"

#include <mpi.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "dist/comm/mpi_check.h"

namespace nd::dist {

namespace {

// The lowest MPI_COMM_WORLD rank on this process's node (the same number on every rank of a
// node), from the shared-memory split; -1 until remember_node() ran.
int64_t g_node_key = -1;

}  // namespace

int NodeMap::nodes() const {
  return node_of_rank.empty() ? 0 : *std::max_element(node_of_rank.begin(), node_of_rank.end()) + 1;
}

int NodeMap::ranks_on(int index) const {
  return static_cast<int>(std::count(node_of_rank.begin(), node_of_rank.end(), index));
}

int NodeMap::max_ranks_per_node() const {
  int most = 0;
  for (int i = 0; i < nodes(); ++i) most = std::max(most, ranks_on(i));
  return most;
}

bool NodeMap::even() const {
  for (int i = 0; i < nodes(); ++i)
    if (ranks_on(i) != ranks_on(0)) return false;
  return true;
}

void remember_node() {
  if (g_node_key >= 0) return;
  int world_rank = 0;
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
  MPI_Comm node;
  MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &node));
  int leader = world_rank;
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node));
  MPI_CHECK(MPI_Comm_free(&node));
  g_node_key = leader;
}

NodeMap nodes_of_consecutive_ranks(int world_size, int k) {
  ND_CHECK(k >= 1, "ranks per node must be >= 1, got " << k);
  NodeMap map;
  for (int r = 0; r < world_size; ++r) map.node_of_rank.push_back(r / k);
  return map;
}

NodeMap discover_nodes(Comm& world, int ranks_per_node) {
  const int n = world.size();
  ND_CHECK_INPUT(ranks_per_node >= 0, "ranks per node must be >= 0 (0 = the nodes MPI reports), got " << ranks_per_node);
  if (n == 1) return nodes_of_consecutive_ranks(1, 1);
  // Every rank must take the same branch (the exchange below is collective): agree on the count.
  const RankRange range = ranges_over_ranks(world, {ranks_per_node}).front();
  ND_CHECK_INPUT(range.same(), "ranks pass different --ranks-per-node (from " << range.min << " to " << range.max
                                                                              << "; 0 = the nodes MPI reports)");
  if (ranks_per_node > 0) return nodes_of_consecutive_ranks(n, ranks_per_node);

  // Each rank writes its node's key into its own slot; the sum fills in everyone's. Any comm
  // works (a split of the world too): the keys were taken when the world was made.
  std::vector<int64_t> keys(n, 0);
  keys[world.rank()] = g_node_key + 1;  // 0: this rank never joined a world
  world.host_allreduce(keys.data(), n, HostReduce::Sum);
  ND_CHECK(std::find(keys.begin(), keys.end(), 0) == keys.end(),
           "discover_nodes: a rank has no node (its communicator was not made by make_world_comm)");
  const std::vector<int64_t>& leaders = keys;
  NodeMap map;
  std::map<int64_t, int> index;  // leader -> node number, in order of first rank
  for (int64_t leader : leaders) {
    auto it = index.emplace(leader, static_cast<int>(index.size())).first;
    map.node_of_rank.push_back(it->second);
  }
  return map;
}

std::string tp_crossing_nodes(const NodeMap& nodes, int tp) {
  const int n = static_cast<int>(nodes.node_of_rank.size());
  for (int first = 0; first + tp <= n; first += tp) {
    const int a = nodes.node(first), b = nodes.node(first + tp - 1);
    bool inside = true;
    for (int r = first; r < first + tp; ++r) inside = inside && nodes.node(r) == a;
    if (inside) continue;
    std::ostringstream out;
    out << "the tensor-parallel size " << tp << " crosses nodes: ranks " << first << "-" << first + tp - 1
        << " span nodes " << a << " to " << b << " (" << nodes.nodes() << " nodes, at most "
        << nodes.max_ranks_per_node() << " ranks per node); choose a tp that divides the ranks per node, "
        << "and place ranks node by node (mpirun --map-by slot, srun --distribution=block)";
    return out.str();
  }
  return "";
}

std::string describe_placement(const NodeMap& nodes, int tp, int pp) {
  const int n = static_cast<int>(nodes.node_of_rank.size());
  std::ostringstream out;
  out << nodes.nodes() << (nodes.nodes() == 1 ? " node x " : " nodes x ");
  if (nodes.even()) {
    out << nodes.ranks_on(0) << (nodes.ranks_on(0) == 1 ? " rank" : " ranks") << " per node";
  } else {
    out << "up to " << nodes.max_ranks_per_node() << " ranks per node (uneven)";
  }
  if (n % (tp * pp) != 0) return out.str();
  const int dp = n / (tp * pp);
  // The grid's table: world rank = t + tp (d + dp p). An axis lives inside a node when every one
  // of its groups does.
  auto inside = [&](int stride, int size) {
    for (int r = 0; r < n; ++r) {
      const int coord = r / stride % size, first = r - coord * stride;
      if (nodes.node(r) != nodes.node(first)) return false;
    }
    return true;
  };
  const struct {
    const char* name;
    int size, stride;
  } axes[] = {{"tp", tp, 1}, {"dp", dp, tp}, {"pp", pp, tp * dp}};
  const char* sep = "; ";
  for (const auto& axis : axes) {
    if (axis.size <= 1) continue;
    out << sep << axis.name << " " << axis.size << (inside(axis.stride, axis.size) ? " inside a node" : " across nodes");
    sep = ", ";
  }
  return out.str();
}

}  // namespace nd::dist
