// The pipeline schedules checked without a model: each schedule's order of forwards and
// backwards per rank against its definition, the simulated ranks (sends waiting for their
// receives) run every program to its end with each receive getting the micro-batch it expects,
// and the simulated bubble equals (P - 1) / (V m) for GPipe, 1F1B and interleaved (forward one
// unit, backward two), ZB-H1's (P - 1) / (3 m), below 1F1B's. A broken program is caught.
#include <gtest/gtest.h>

#include "train/pipeline_simulator.h"

namespace nd::train {
namespace {

using Plan = std::vector<std::vector<PipeAction>>;

std::vector<PipeAction> only(const std::vector<PipeAction>& actions, int chunk) {
  std::vector<PipeAction> out;
  for (const PipeAction& a : actions)
    if (a.chunk == chunk) out.push_back(a);
  return out;
}

// Runs the plan on simulated ranks; the costs are a chunk's (1/V of a stage's work per pass).
PassCosts chunk_costs(const PipelineShape& s) {
  PassCosts costs;
  costs.forward = 1.0 / s.virtual_;
  costs.backward_input = costs.backward_weight = 1.0 / s.virtual_;
  return costs;
}

SimulationResult simulate(const Plan& plan, const PipelineShape& s, bool rendezvous) {
  return simulate_pipeline(pipeline_programs(plan, s), s, chunk_costs(s),
                           rendezvous ? Delivery::Rendezvous : Delivery::Eager);
}

// With sends that complete when posted, with sends that wait for their receive, and with NCCL's
// groups that move only as a whole (the strict check).
void runs_everywhere(const Plan& plan, const PipelineShape& s, const char* what) {
  for (Delivery delivery : {Delivery::Eager, Delivery::Rendezvous, Delivery::WholeGroups}) {
    SimulationResult r = simulate_pipeline(pipeline_programs(plan, s), s, chunk_costs(s), delivery);
    EXPECT_EQ(r.error, "") << what << " P " << s.stages << " m " << s.micro << " V " << s.virtual_ << " delivery "
                           << static_cast<int>(delivery);
  }
}

TEST(PipelinePlan, GPipeRunsAllForwardsThenAllBackwards) {
  for (int P : {2, 3, 4})
    for (int m : {1, 2, 5, 8}) {
      PipelineShape s{P, m, 1};
      Plan plan = pipeline_actions(PipelineKind::GPipe, s);
      for (const auto& actions : plan) {
        ASSERT_EQ(actions.size(), 2u * m);
        for (int k = 0; k < m; ++k) {
          EXPECT_EQ(actions[k].op, PipeOp::Forward);
          EXPECT_EQ(actions[k].micro, k);
          EXPECT_EQ(actions[m + k].op, PipeOp::Backward);
          EXPECT_EQ(actions[m + k].micro, k);
        }
      }
      runs_everywhere(plan, s, "gpipe");
    }
}

// 1F1B: min(P - r - 1, m) forwards, then F/B in turn, then backwards; micro-batches in order.
void expect_one_f_one_b(const std::vector<PipeAction>& actions, int P, int r, int m, PipeOp backward) {
  const int warmup = std::min(P - r - 1, m);
  std::vector<PipeAction> expected;
  for (int k = 0; k < warmup; ++k) expected.push_back({PipeOp::Forward, k, 0});
  for (int k = 0; k < m - warmup; ++k) {
    expected.push_back({PipeOp::Forward, warmup + k, 0});
    expected.push_back({backward, k, 0});
  }
  for (int k = m - warmup; k < m; ++k) expected.push_back({backward, k, 0});
  ASSERT_EQ(actions.size(), expected.size()) << "rank " << r;
  for (size_t i = 0; i < actions.size(); ++i) {
    EXPECT_EQ(actions[i].op, expected[i].op) << "rank " << r << " action " << i;
    EXPECT_EQ(actions[i].micro, expected[i].micro) << "rank " << r << " action " << i;
  }
}

TEST(PipelinePlan, OneFOneBWarmsUpThenAlternates) {
  for (int P : {2, 3, 4})
    for (int m : {1, 2, 4, 8, 9}) {
      PipelineShape s{P, m, 1};
      Plan plan = pipeline_actions(PipelineKind::OneFOneB, s);
      for (int r = 0; r < P; ++r) expect_one_f_one_b(plan[r], P, r, m, PipeOp::Backward);
      runs_everywhere(plan, s, "1f1b");
    }
}

TEST(PipelinePlan, InterleavedGoesRoundTheChunksInGroupsOfP) {
  for (int P : {2, 4})
    for (int V : {2, 3})
      for (int m : {2 * P, 3 * P, 4 * P}) {
        PipelineShape s{P, m, V};
        Plan plan = pipeline_actions(PipelineKind::Interleaved, s);
        for (int r = 0; r < P; ++r) {
          const auto& actions = plan[r];
          ASSERT_EQ(actions.size(), 2u * m * V);
          // Warm-up: forwards only, as many as Megatron's formula says.
          const int warmup = std::min((P - r - 1) * 2 + (V - 1) * P, m * V);
          for (int i = 0; i < warmup; ++i) EXPECT_EQ(actions[i].op, PipeOp::Forward) << "rank " << r << " " << i;
          // The first forwards: P micro-batches through chunk 0, then the same P through chunk 1.
          for (int i = 0; i < std::min(warmup, P * V); ++i) {
            EXPECT_EQ(actions[i].chunk, i / P);
            EXPECT_EQ(actions[i].micro, i % P);
          }
          // Backwards start from the last chunk; each chunk sees the micro-batches in order.
          for (const PipeAction& a : actions)
            if (a.op == PipeOp::Backward) {
              EXPECT_EQ(a.chunk, V - 1) << "rank " << r;
              break;
            }
          for (int c = 0; c < V; ++c) {
            int next_f = 0, next_b = 0;
            for (const PipeAction& a : only(actions, c)) {
              if (a.op == PipeOp::Forward) {
                EXPECT_EQ(a.micro, next_f++);
              } else {
                EXPECT_EQ(a.micro, next_b++);
              }
            }
            EXPECT_EQ(next_f, m);
            EXPECT_EQ(next_b, m);
          }
        }
        runs_everywhere(plan, s, "interleaved");
      }
}

TEST(PipelinePlan, ZeroBubbleKeepsOneFOneBOrderAndBoundsDeferredWeights) {
  for (int P : {2, 3, 4})
    for (int m : {1, 4, 8, 16}) {
      PipelineShape s{P, m, 1};
      Plan plan = pipeline_actions(PipelineKind::ZeroBubble, s);
      for (int r = 0; r < P; ++r) {
        std::vector<PipeAction> without_w;
        int in_flight = 0, weights = 0;
        for (const PipeAction& a : plan[r]) {
          if (a.op == PipeOp::BackwardWeight) {
            --in_flight;
            ++weights;
            continue;
          }
          // A forward only while fewer than P micro-batches hold activations (1F1B's peak).
          if (a.op == PipeOp::Forward) {
            EXPECT_LT(in_flight, P) << "rank " << r;
            ++in_flight;
          }
          without_w.push_back(a);
        }
        EXPECT_EQ(weights, m);
        expect_one_f_one_b(without_w, P, r, m, PipeOp::BackwardInput);
      }
      runs_everywhere(plan, s, "zb");
    }
}

TEST(PipelinePlan, BubbleIsTheTheorysFraction) {
  for (int P : {2, 4})
    for (int m : {4, 8, 16}) {
      for (PipelineKind kind : {PipelineKind::GPipe, PipelineKind::OneFOneB}) {
        PipelineShape s{P, m, 1};
        SimulationResult r = simulate(pipeline_actions(kind, s), s, false);
        EXPECT_NEAR(r.bubble_fraction, ideal_bubble_fraction(kind, s), 1e-9) << pipeline_kind_name(kind);
      }
      for (int V : {2, 4}) {
        if (m <= P) continue;  // interleaving needs more micro-batches than stages
        PipelineShape s{P, m, V};
        SimulationResult r = simulate(pipeline_actions(PipelineKind::Interleaved, s), s, true);
        EXPECT_NEAR(r.bubble_fraction, ideal_bubble_fraction(PipelineKind::Interleaved, s), 1e-9)
            << "P " << P << " m " << m << " V " << V;
      }
      PipelineShape s{P, m, 1};
      const double one_f_one_b = simulate(pipeline_actions(PipelineKind::OneFOneB, s), s, false).bubble_fraction;
      const double zb = simulate(pipeline_actions(PipelineKind::ZeroBubble, s), s, false).bubble_fraction;
      EXPECT_LT(zb, one_f_one_b) << "P " << P << " m " << m;
      EXPECT_NEAR(zb, ideal_bubble_fraction(PipelineKind::ZeroBubble, s), 1e-9) << "P " << P << " m " << m;
    }
}

// GPT-2 XL under GPipe hung on NCCL: before the first backward, a rank posted the last
// forward's activation and the first backward's gradient in one group, while the next stage
// receives that activation before its last forward and sends the gradient after its first
// backward. Posted whole, as NCCL may hold them, neither group can move; an MPI rendezvous moves
// each transfer on its own and runs. The plan posts such a slot's sends apart from its receives.
TEST(PipelinePlan, GPipeSendsItsLastActivationApartFromTheFirstGradient) {
  for (int P : {2, 3, 4})
    for (int m : {1, 2, 8}) {
      PipelineShape s{P, m, 1};
      std::vector<RankProgram> programs = pipeline_programs(pipeline_actions(PipelineKind::GPipe, s), s);
      for (int r = 0; r + 1 < P; ++r) {
        const RankProgram& p = programs[r];
        ASSERT_TRUE(p.sends_apart[m]) << "rank " << r << " P " << P << " m " << m;
        std::vector<PostedGroup> posted = posted_groups(p);
        // The slot before the first backward posts the activation alone, then the gradient's receive.
        std::vector<const PostedGroup*> slot;
        for (const PostedGroup& g : posted)
          if (g.slot == static_cast<size_t>(m)) slot.push_back(&g);
        ASSERT_EQ(slot.size(), 2u);
        for (const PipeTransfer& t : slot[0]->transfers) EXPECT_TRUE(t.send && t.message.forward);
        for (const PipeTransfer& t : slot[1]->transfers) EXPECT_TRUE(!t.send);
      }
      // The same programs with that slot posted whole: a deadlock under NCCL's delivery only.
      for (RankProgram& p : programs) p.sends_apart.assign(p.sends_apart.size(), false);
      EXPECT_EQ(simulate_pipeline(programs, s, chunk_costs(s), Delivery::Rendezvous).error, "");
      if (P >= 2) {
        const std::string error = simulate_pipeline(programs, s, chunk_costs(s), Delivery::WholeGroups).error;
        EXPECT_NE(error.find("deadlock"), std::string::npos) << "P " << P << " m " << m << ": " << error;
      }
    }
}

// 1F1B, interleaved and zero-bubble pair their groups one to one with their peers: nothing is
// posted apart, so their measured programs stay as they were.
TEST(PipelinePlan, OtherSchedulesPostEveryGroupWhole) {
  for (int P : {2, 3, 4})
    for (int m : {P, 2 * P, 8}) {
      for (PipelineKind kind : {PipelineKind::OneFOneB, PipelineKind::ZeroBubble, PipelineKind::Interleaved}) {
        const int V = kind == PipelineKind::Interleaved ? 2 : 1;
        if (V > 1 && (m % P != 0 || m <= P)) continue;
        PipelineShape s{P, m, V};
        for (const RankProgram& p : pipeline_programs(pipeline_actions(kind, s), s))
          for (size_t i = 0; i < p.sends_apart.size(); ++i)
            EXPECT_FALSE(p.sends_apart[i]) << pipeline_kind_name(kind) << " P " << P << " m " << m << " slot " << i;
      }
    }
}

TEST(PipelinePlan, SimulatorCatchesBrokenPrograms) {
  PipelineShape s{2, 4, 1};
  Plan plan = pipeline_actions(PipelineKind::OneFOneB, s);
  // Rank 1 runs micro-batches 0 and 1 swapped: its receives get the other micro-batch's tensor.
  Plan swapped = plan;
  std::swap(swapped[1][0], swapped[1][2]);
  std::swap(swapped[1][1], swapped[1][3]);
  EXPECT_NE(simulate(swapped, s, true).error.find("where it expects"), std::string::npos);
  // Rank 0 runs each backward right after its forward while rank 1 runs every forward first:
  // each waits for the other.
  Plan gpipe_first_rank = plan;
  gpipe_first_rank[0] = {{PipeOp::Forward, 0, 0}, {PipeOp::Backward, 0, 0}, {PipeOp::Forward, 1, 0},
                         {PipeOp::Backward, 1, 0}, {PipeOp::Forward, 2, 0}, {PipeOp::Backward, 2, 0},
                         {PipeOp::Forward, 3, 0}, {PipeOp::Backward, 3, 0}};
  Plan rank1_gpipe = gpipe_first_rank;
  rank1_gpipe[1] = pipeline_actions(PipelineKind::GPipe, s)[1];
  EXPECT_NE(simulate(rank1_gpipe, s, true).error.find("deadlock"), std::string::npos);
  // A backward before its forward.
  Plan early = plan;
  std::swap(early[1][0], early[1][1]);
  EXPECT_NE(simulate(early, s, true).error.find("before its forward"), std::string::npos);
  // A missing micro-batch on one rank: the other waits for a message never sent.
  Plan missing = plan;
  missing[0].pop_back();
  EXPECT_NE(simulate(missing, s, true).error, "");
}

}  // namespace
}  // namespace nd::train
