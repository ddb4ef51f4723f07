// Sets NANODIST_RANKS_PER_NODE for the scope of a test (every rank sets the same), so node logic
// runs on one machine; the variable is removed again at the end.
#pragma once
#include <cstdlib>
#include <string>

namespace nd::test {

class PretendNodes {
 public:
  explicit PretendNodes(int ranks_per_node) {
    setenv("NANODIST_RANKS_PER_NODE", std::to_string(ranks_per_node).c_str(), 1);
  }
  ~PretendNodes() { unsetenv("NANODIST_RANKS_PER_NODE"); }
  PretendNodes(const PretendNodes&) = delete;
  PretendNodes& operator=(const PretendNodes&) = delete;
};

}  // namespace nd::test
