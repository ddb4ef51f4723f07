// The thread count of a command (threads.h).
#include "cli/threads.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <utility>

namespace nd::cli {

int physical_cores() {
  std::ifstream in("/proc/cpuinfo");
  std::set<std::pair<std::string, std::string>> cores;  // (physical id, core id)
  std::string physical = "0";
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (line.rfind("physical id", 0) == 0) physical = value;
    if (line.rfind("core id", 0) == 0) cores.insert({physical, value});
  }
  const int logical = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return cores.empty() ? logical : std::min(logical, static_cast<int>(cores.size()));
}

int apply_thread_count(int64_t flag) {
  if (flag < 0 && std::getenv("OMP_NUM_THREADS") != nullptr) return omp_get_max_threads();
  int threads = static_cast<int>(flag);
  if (flag <= 0) {
    // Ranks of one node share its cores (Open MPI says how many ranks this node runs).
    const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    const int ranks_here = local ? std::max(1, std::atoi(local)) : 1;
    threads = std::max(1, physical_cores() / ranks_here);
  }
  omp_set_num_threads(threads);
  return threads;
}

}  // namespace nd::cli
