// Sets NANODIST_RANKS_PER_NODE for the scope of a test (every rank sets the same), so node logic
// runs on one machine; the variable is as it was again at the end.
#pragma once
#include <string>

#include "tests/common/scoped_env.h"

namespace nd::test {

class PretendNodes {
 public:
  explicit PretendNodes(int ranks_per_node) : env_("NANODIST_RANKS_PER_NODE", std::to_string(ranks_per_node)) {}

 private:
  ScopedEnv env_;
};

}  // namespace nd::test
