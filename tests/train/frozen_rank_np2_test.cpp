// A rank frozen with SIGSTOP in a 2-rank CPU (MPI) run: the job ends within 30 s, by the
// watchdog (--comm-timeout 10) and by the heartbeat (default settings).
#include "frozen_rank.h"

namespace nd::train::testing {
namespace {

TEST(FrozenRank, TwoRanksEndWithinThirtySeconds) { run_frozen_rank_drills(2); }

}  // namespace
}  // namespace nd::train::testing
