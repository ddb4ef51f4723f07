// Skip, resume or train each planned run; one progress line before and after each.
#include "experiments/run_queue.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "experiments/run_metrics.h"
#include "tensor/error.h"
#include "train/metrics.h"
#include "train/run/run_settings_file.h"
#include "train/trainer.h"

namespace nd::experiments {

namespace {

// Flags that cannot change a run's metrics, so a rerun may change them and still reuse the run:
//   out            each run's own folder (the experiment's --out may be moved as a whole)
//   log-interval   how often a step record is written, not what it holds
//   ckpt-interval, keep   when checkpoints are written and how many stay; resuming is exact
//   comm-timeout, heartbeat-timeout   when a stuck rank gives up (dist/parallel/fault_guard.h)
//   cuda-graph     replays the same kernels in the same order as the eager step
//   bucket-mb      groups gradients into all-reduce calls; each element's sum is unchanged
//   layer-stats    a probe beside the step that draws no random numbers and changes no weight
//                  (train/layer_stats.h); the run is bit for bit the same
// Everything else is compared (--resume and --overwrite, how a run is launched, never are),
// including device, dtype, collectives and attention: they choose kernels and reduction orders,
// so the numbers differ even where the maths agrees.
const std::set<std::string>& ignored_flags() {
  static const std::set<std::string> keys = {"out",          "log-interval",      "ckpt-interval", "keep",
                                             "comm-timeout", "heartbeat-timeout", "cuda-graph",    "bucket-mb",
                                             "layer-stats"};
  return keys;
}

// The data as an absolute path, so `--data d` and `--data ./d` name the same data in run.conf.
train::TrainConfig with_absolute_data(train::TrainConfig config) {
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(config.data.dir, ec);
  const std::string data = ec ? "" : std::filesystem::weakly_canonical(absolute, ec).string();
  if (!ec && !config.data.dir.empty()) config.data.dir = data;
  return config;
}

// "" when the run folder's record (train/run/run_settings_file.h) holds the settings of `config`
// on `world_size` ranks, else one sentence naming the folder and the first differing key.
std::string run_settings_mismatch(const train::TrainConfig& config, int world_size) {
  const std::string& dir = config.checkpoint.out_dir;
  const auto changed = train::changed_run_settings(config, world_size, ignored_flags());
  if (!changed)
    return "run folder " + dir + " has no record of the settings it was trained with (" +
           train::run_settings_path(dir) + " is missing: an older nanodist made it); pick a fresh --out or delete "
           "that folder";
  if (changed->empty()) return "";
  const train::SettingChange& c = changed->front();
  return "run folder " + dir + " was trained with other settings: " + c.key + " " +
         c.recorded.value_or("(not recorded)") + " there vs " + c.now +
         " now; pick a fresh --out or delete that folder";
}

}  // namespace

RunStatus run_status(const std::string& run_dir) {
  const std::string path = run_dir + "/metrics.jsonl";
  if (!std::filesystem::exists(path)) return RunStatus::New;
  return read_run_metrics(path).finished ? RunStatus::Finished : RunStatus::Unfinished;
}

QueueOutcome run_queue(const std::vector<PlannedRun>& runs, dist::Comm& comm, const std::string& command,
                       std::ostream* progress, dist::FaultGuard* guard) {
  QueueOutcome outcome;
  const bool lead = comm.rank() == 0;
  auto say = [&](const std::string& line) {
    if (lead && progress) *progress << line << std::endl;
  };
  // Rank 0 reads every folder before the first run trains, so a folder of other settings stops
  // the experiment before any training time is spent, on every rank at once.
  std::vector<int64_t> statuses(runs.size() + 1, 0);  // the last entry: 1 = a folder does not match
  std::string mismatch;
  if (lead) {
    for (size_t i = 0; i < runs.size() && mismatch.empty(); ++i) {
      const train::TrainConfig config = with_absolute_data(runs[i].config);
      const RunStatus status = run_status(config.checkpoint.out_dir);
      statuses[i] = static_cast<int64_t>(status);
      // A folder with a record but no metrics started and stopped before its first step.
      if (status != RunStatus::New || train::changed_run_settings(config, comm.size()))
        mismatch = run_settings_mismatch(config, comm.size());
    }
    statuses.back() = mismatch.empty() ? 0 : 1;
  }
  comm.host_allreduce(statuses.data(), static_cast<int>(statuses.size()), dist::HostReduce::Max);
  if (statuses.back() != 0) {
    if (lead) ND_FAIL_INPUT(mismatch);
    ND_FAIL_INPUT("rank 0 found a run folder trained with other settings (its error line names it)");
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    const PlannedRun& run = runs[i];
    const std::string head = command + " [" + std::to_string(i + 1) + "/" + std::to_string(runs.size()) + "] " +
                             run.label;
    const int64_t status = statuses[i];
    if (static_cast<RunStatus>(status) == RunStatus::Finished) {
      say(head + ": finished before, skipped");
      ++outcome.skipped;
      continue;
    }
    train::TrainConfig config = with_absolute_data(run.config);
    config.checkpoint.resume = static_cast<RunStatus>(status) == RunStatus::Unfinished;
    std::ofstream log;
    if (lead) {
      std::error_code ec;
      std::filesystem::create_directories(config.checkpoint.out_dir, ec);
      ND_CHECK_INPUT(!ec, "cannot create " << config.checkpoint.out_dir << ": " << ec.message());
      const std::string log_path = config.checkpoint.out_dir + "/train.log";
      log.open(log_path, config.checkpoint.resume ? std::ios::app : std::ios::trunc);
      ND_CHECK_INPUT(log.is_open(), "cannot write " << log_path);
    }
    say(head + (config.checkpoint.resume ? ": resuming" : ": training") + " (" +
        std::to_string(config.schedule.max_iters) + " steps, log in " + config.checkpoint.out_dir + "/train.log)");
    train::RunContext context;
    context.comm = &comm;
    context.log = lead ? &log : nullptr;
    context.fault_guard = guard;
    context.hash_parameters = false;
    train::TrainResult r = train::run_training(config, context);
    char line[200];
    std::snprintf(line, sizeof(line), ": done, %lld steps | last val loss %s | best val loss %s%s",
                  static_cast<long long>(r.steps_done), train::format_loss(r.last_val_loss).c_str(),
                  train::format_loss(r.best_val_loss).c_str(),
                  r.diverged ? " | diverged" : r.stopped_by_signal ? " | stopped" : "");
    say(head + line);
    if (r.stopped_by_signal) {
      say(head + ": stopped by a signal after step " + std::to_string(r.steps_done) +
          "; run the same command again to resume the experiment");
      outcome.stopped_by_signal = true;
      break;
    }
    ++outcome.trained;
  }
  return outcome;
}

}  // namespace nd::experiments
