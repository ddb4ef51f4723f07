// Skip, resume or train each planned run; one progress line before and after each.
#include "experiments/run_queue.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include "experiments/run_metrics.h"
#include "experiments/run_settings.h"
#include "tensor/error.h"
#include "train/trainer.h"

namespace nd::experiments {

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
      const train::TrainConfig& config = runs[i].config;
      const RunStatus status = run_status(config.checkpoint.out_dir);
      statuses[i] = static_cast<int64_t>(status);
      if (status != RunStatus::New || std::filesystem::exists(config.checkpoint.out_dir + "/settings.conf"))
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
    train::TrainConfig config = run.config;
    config.checkpoint.resume = static_cast<RunStatus>(status) == RunStatus::Unfinished;
    std::ofstream log;
    if (lead) {
      std::error_code ec;
      std::filesystem::create_directories(config.checkpoint.out_dir, ec);
      ND_CHECK_INPUT(!ec, "cannot create " << config.checkpoint.out_dir << ": " << ec.message());
      const std::string log_path = config.checkpoint.out_dir + "/train.log";
      log.open(log_path, config.checkpoint.resume ? std::ios::app : std::ios::trunc);
      ND_CHECK_INPUT(log.is_open(), "cannot write " << log_path);
      if (!config.checkpoint.resume) write_run_settings(config, comm.size());
    }
    say(head + (config.checkpoint.resume ? ": resuming" : ": training") + " (" + std::to_string(config.schedule.max_iters) +
        " steps, log in " + config.checkpoint.out_dir + "/train.log)");
    train::RunContext context;
    context.comm = &comm;
    context.log = lead ? &log : nullptr;
    context.fault_guard = guard;
    context.hash_parameters = false;
    train::TrainResult r = train::run_training(config, context);
    char line[200];
    std::snprintf(line, sizeof(line), ": done, %lld steps | last val loss %.4f | best val loss %.4f%s",
                  static_cast<long long>(r.steps_done), r.last_val_loss, r.best_val_loss,
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
