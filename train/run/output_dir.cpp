// Claiming the output directory of a run (output_dir.h).
#include "train/run/output_dir.h"

#include <exception>
#include <filesystem>
#include <system_error>

#include "data/data_dir_contents.h"
#include "tensor/error.h"
#include "train/ckpt/checkpoint.h"
#include "train/ckpt/checkpoint_index.h"
#include "train/run/run_files.h"
#include "train/run/run_settings_file.h"
#include "train/run/stop_marker.h"

namespace nd::train {
namespace {

std::string metrics_path(const std::string& out_dir) { return out_dir + "/metrics.jsonl"; }

}  // namespace

std::string describe_previous_run(const std::string& out_dir) {
  const auto checkpoints = list_checkpoints(out_dir);
  const bool metrics = std::filesystem::exists(metrics_path(out_dir));
  std::string what;
  if (checkpoints.size() == 1) {
    what = "a checkpoint (step " + std::to_string(checkpoints.front().first) + ")";
  } else if (!checkpoints.empty()) {
    what = std::to_string(checkpoints.size()) + " checkpoints (steps " + std::to_string(checkpoints.front().first) +
           " to " + std::to_string(checkpoints.back().first) + ")";
  }
  if (metrics) what += std::string(what.empty() ? "" : " and ") + "metrics.jsonl";
  return what;
}

ClaimedOutputDir claim_output_dir(const TrainConfig& c) {
  ND_CHECK_INPUT(!(c.checkpoint.resume && c.checkpoint.overwrite),
                 "--resume and --overwrite contradict each other: --resume continues the run in --out "
                     << c.checkpoint.out_dir << ", --overwrite deletes it; pass one");
  const std::string data_file = token_file_in(c.checkpoint.out_dir);
  ND_CHECK_INPUT(data_file.empty(), "--out " << c.checkpoint.out_dir << " holds token data (" << data_file
                                             << "): a run writes its checkpoints, metrics.jsonl and run.conf into "
                                             << "--out, so give it a directory of its own (--data reads the data)");
  ClaimedOutputDir claimed;
  prepare_output_dir(c.checkpoint.out_dir);
  claimed.lock = std::make_unique<RunDirLock>(c.checkpoint.out_dir);
  remove_checkpoint_temporaries(c.checkpoint.out_dir);  // left by a run that was killed while writing
  remove_stop_marker(c.checkpoint.out_dir);             // the last run's: this one has not stopped
  if (c.checkpoint.resume) return claimed;
  const std::string previous = describe_previous_run(c.checkpoint.out_dir);
  if (previous.empty()) return claimed;
  ND_CHECK_INPUT(c.checkpoint.overwrite, "--out " << c.checkpoint.out_dir << " holds another run: " << previous
                                       << "; pass --resume to continue it, or --overwrite to delete it and start over "
                                          "(or pick another --out)");
  std::error_code ec;
  for (const auto& [step, path] : list_checkpoints(c.checkpoint.out_dir))
    remove_checkpoint(path);  // the index and its parts
  for (const std::string& path : {metrics_path(c.checkpoint.out_dir), run_settings_path(c.checkpoint.out_dir)}) {
    std::filesystem::remove(path, ec);
    ND_CHECK_INPUT(!ec, "--overwrite: cannot remove " << path << ": " << ec.message());
  }
  claimed.notes.push_back("--overwrite: removed " + previous + " of the previous run in " + c.checkpoint.out_dir);
  return claimed;
}

ClaimedOutputDir claim_output_dir_on_rank0(const TrainConfig& config, dist::Comm& world) {
  ClaimedOutputDir claimed;
  std::exception_ptr failure;
  int64_t failed = 0;
  if (world.rank() == 0) {
    try {
      claimed = claim_output_dir(config);
    } catch (const Error&) {
      failure = std::current_exception();
      failed = 1;
    }
  }
  if (world.size() > 1) world.host_allreduce(&failed, 1, dist::HostReduce::Max);
  if (failure) std::rethrow_exception(failure);
  ND_CHECK_INPUT(failed == 0,
                 "rank 0 could not take --out " << config.checkpoint.out_dir << " (its error line says why)");
  return claimed;
}

}  // namespace nd::train
