// run_allreduce_compare (allreduce_compare.h): per size, each implementation is checked once
// against the closed form, then timed; auto's ratio to the fastest choice is worked out last.
#include "lab/allreduce_compare.h"

#include <algorithm>

#include "dist/comm/bench/comm_bench_data.h"

namespace nd::lab {

using namespace nd::dist;

namespace {
constexpr const Algorithm* kChoiceOf = kAutoChoices;
constexpr int kAuto = kAutoChoiceCount;
constexpr int kNativeColumn = 3;
constexpr int kGpuSettleIterations = 3000;
constexpr int kRounds = 3;
}  // namespace

const char* compare_impl_name(int i) { return i == kAuto ? "auto" : algorithm_name(kChoiceOf[i]); }

Algorithm compare_choice(int i) { return kChoiceOf[i]; }

BenchCommRow CompareRow::as_bench_row(int impl, const std::string& type, int nranks) const {
  BenchCommRow row;
  row.bytes = bytes;
  row.count = count;
  row.type = type;
  row.redop = "sum";
  row.time_us = time_us[impl];
  row.algbw_gbps = static_cast<double>(bytes) / time_us[impl] / 1e3;
  row.busbw_gbps = row.algbw_gbps * bus_factor(BenchOp::AllReduce, nranks);
  row.wrong = wrong[impl];
  return row;
}

void rate_against_best(CompareRow& row) {
  row.best = -1;
  for (int i = 0; i < kAutoChoiceCount; ++i)
    if (row.time_us[i] >= 0 && (row.best < 0 || row.time_us[i] < row.time_us[row.best])) row.best = i;
  row.auto_over_best = row.best >= 0 && row.time_us[row.best] > 0 ? row.time_us[kAuto] / row.time_us[row.best] : 0.0;
  if (row.best < 0) row.best = kNativeColumn;
}

std::vector<CompareRow> run_allreduce_compare(PeerComm& peer, const BenchCommOptions& options,
                                              const std::function<void(const CompareRow&)>& on_row) {
  ND_CHECK(peer.options().mode == Algorithm::Auto, "the all-reduce comparison needs a PeerComm in auto mode");
  Comm& comm = peer.inner();
  const int r = comm.rank(), n = comm.size();
  const int64_t elem = static_cast<int64_t>(dtype_size(options.dtype));
  std::vector<CompareRow> rows;
  bool settled = false;
  int64_t previous = -1;
  for (double size = static_cast<double>(options.min_bytes); size <= static_cast<double>(options.max_bytes) * (1 + 1e-12);
       size *= options.factor) {
    const int64_t count = std::max<int64_t>(1, static_cast<int64_t>(size) / elem);
    if (count == previous) continue;
    previous = count;
    CompareRow row;
    row.count = count;
    row.bytes = count * elem;
    row.auto_choice = peer.choice(row.bytes);
    Tensor a = Tensor::empty({count}, options.dtype, comm.device());
    // Filled once on the host (slow at 1 GB), copied on the device before each implementation.
    Tensor pristine = Tensor::empty({count}, options.dtype, comm.device());
    bench::fill_pattern(pristine, r, 0);
    bool runs[kCompareImpls];
    auto launcher = [&](int impl) {
      return [&peer, &a, impl] {
        return impl == kAuto ? peer.allreduce_async(a, ReduceOp::Sum)
                             : peer.allreduce_with(kChoiceOf[impl], a, ReduceOp::Sum);
      };
    };
    for (int impl = 0; impl < kCompareImpls; ++impl) {
      // One-shot, two-shot and push run only over registered peer memory; elsewhere they would be
      // NCCL's call under another name, so they are left out of the row.
      const bool peer_choice = impl != kAuto && is_peer_choice(kChoiceOf[impl]);
      runs[impl] = !(peer_choice && (!peer.peer_usable() || row.bytes > peer.largest_bytes(kChoiceOf[impl])));
      row.time_us[impl] = -1;
      if (!runs[impl]) continue;
      auto launch = launcher(impl);
      a.copy_from(pristine);
      CommWork work = launch();
      if (!settled && comm.device().is_cuda()) {
        // As in run_bench_comm: lazy connections and idle clocks are paid before the first row.
        for (int i = 0; i < kGpuSettleIterations; ++i) work = launch();
        work.wait();
        a.copy_from(pristine);
        work = launch();
      }
      settled = true;
      work.wait();
      int64_t wrong = bench::count_wrong(a, bench::Expect::RankSum, r, n, 0, 0);
      comm.host_allreduce(&wrong, 1, HostReduce::Sum);
      row.wrong[impl] = wrong;
    }
    // Timed in rounds, the implementations in turn within each, keeping each one's fastest round:
    // a drift of the clocks or of the other traffic on the node during the row then weighs on
    // every implementation alike, and auto's ratio to the best is not a difference of two moments.
    for (int round = 0; round < kRounds; ++round)
      for (int impl = 0; impl < kCompareImpls; ++impl) {
        if (!runs[impl]) continue;
        a.copy_from(pristine);  // sums of sums would overflow to infinity over the rounds
        const double us = 1e6 * time_launches(comm, options.timing, options.warmup, options.iters, launcher(impl));
        if (row.time_us[impl] < 0 || us < row.time_us[impl]) row.time_us[impl] = us;
      }
    rate_against_best(row);
    rows.push_back(row);
    if (on_row) on_row(row);
  }
  return rows;
}

}  // namespace nd::lab
