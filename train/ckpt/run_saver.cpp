// RunSaver: snapshot, part write (here or on the writer thread), agreement, index.
#include "train/ckpt/run_saver.h"

#include <sys/resource.h>

#include <cstdio>
#include <filesystem>

#include "tensor/error.h"
#include "train/ckpt/checkpoint_index.h"

namespace nd::train {

RunSaver::RunSaver(dist::Comm& world, int dp_rank, int dp_size, bool async)
    : world_(world), dp_rank_(dp_rank), dp_size_(dp_size) {
  if (async) writer_ = std::make_unique<BackgroundWriter>();
}

// The writer joins its thread first (an unfinished part stays a temporary), before the snapshot's
// buffers it may be reading go.
RunSaver::~RunSaver() { writer_.reset(); }

std::string RunSaver::save(const RunParts& run, const RunCounters& counters) {
  std::string completed = finish();
  if (counters.step == saved_step_) return completed;
  saved_step_ = counters.step;
  out_dir_ = run.config.checkpoint.out_dir;
  keep_ = run.config.checkpoint.keep;
  pending_path_ = checkpoint_path(out_dir_, counters.step);
  // A complete checkpoint of this step (from an earlier run in this directory) stops being one
  // before any part of it is replaced.
  if (world_.rank() == 0) remove_checkpoint(pending_path_);
  if (world_.size() > 1) world_.barrier();
  meta_ = run_metadata(run, counters);
  started_ = std::chrono::steady_clock::now();
  snapshot_.take(run.model, run.tp, &run.optimizer, dp_rank_, dp_size_, snapshot_mode());
  // The FP8 histories are agreed over the tp and dp groups: one copy, from dp and tp rank 0.
  fp8_snapshot_.clear();
  if (run.fp8 != nullptr && dp_rank_ == 0 && run.tp.rank() == 0)
    fp8_snapshot_.take(run.fp8->scaling());
  slices_ = snapshot_.slices();
  slices_.insert(slices_.end(), fp8_snapshot_.slices().begin(), fp8_snapshot_.slices().end());
  snapshot_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  part_state_ = 0;
  if (writer_) {
    writer_->submit([this] { write_part(); });
    return completed;  // the save before, if it completed only now
  }
  write_part();
  return agree_and_complete();
}

// A synchronous save writes before the model changes: the slices of CPU tensors point into them.
// An asynchronous one copies them into host buffers (pinned on a GPU, whose device changes its
// memory unseen) and the writer thread sends the copy to the disk while training goes on.
SnapshotMode RunSaver::snapshot_mode() const { return writer_ ? SnapshotMode::kCopy : SnapshotMode::kBorrow; }

void RunSaver::prepare(const RunParts& run) {
  if (writer_) snapshot_.take(run.model, run.tp, &run.optimizer, dp_rank_, dp_size_, snapshot_mode());
}

namespace {

// The CPU time of the calling thread (user and system), in seconds.
double thread_cpu_seconds() {
  struct rusage usage;
  if (::getrusage(RUSAGE_THREAD, &usage) != 0) return 0.0;
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

}  // namespace

void RunSaver::write_part() {
  const double cpu_before = thread_cpu_seconds();
  const auto began = std::chrono::steady_clock::now();
  try {
    write_checkpoint_part(pending_path_, world_.rank(), slices_);
    writer_cpu_seconds_ = thread_cpu_seconds() - cpu_before;
    part_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    part_state_ = 1;
  } catch (const Error& e) {
    part_error_ = e.message();
    part_state_ = 2;
  }
}

int64_t RunSaver::part_written() const { return pending() && part_state_ == 1 ? 1 : 0; }
int64_t RunSaver::part_failed() const { return pending() && part_state_ == 2 ? 1 : 0; }

std::string RunSaver::complete_if_written(int64_t written, int64_t failed) {
  if (!pending()) return "";
  if (failed > 0) {
    if (writer_) writer_->wait();
    fail_pending(part_state_ == 2 ? part_error_ : "another rank could not write its part");
  }
  if (written < world_.size()) return "";
  if (writer_) writer_->wait();
  return complete_pending();
}

std::string RunSaver::finish() {
  if (!pending()) {
    wait_for_prune();
    return "";
  }
  if (writer_) writer_->wait();
  return agree_and_complete();
}

std::string RunSaver::agree_and_complete() {
  int64_t counts[2] = {part_state_ == 1 ? 1 : 0, part_state_ == 2 ? 1 : 0};
  if (world_.size() > 1) world_.host_allreduce(counts, 2, dist::HostReduce::Sum);
  if (counts[1] > 0) fail_pending(part_state_ == 2 ? part_error_ : "another rank could not write its part");
  std::string error;
  std::string path;
  try {
    path = complete_pending();
    wait_for_prune();  // the end of the run, a preemption or a save that found this one unfinished
  } catch (const Error& e) {
    error = e.message();
  }
  int64_t failed = error.empty() ? 0 : 1;
  if (world_.size() > 1) world_.host_allreduce(&failed, 1, dist::HostReduce::Sum);
  ND_CHECK_INPUT(failed == 0, (error.empty() ? "rank 0 could not write the checkpoint index" : error));
  return path;
}

std::string RunSaver::complete_pending() {
  std::string path = pending_path_;
  pending_path_.clear();
  if (world_.rank() != 0) return path;
  try {
    const int64_t bytes = write_checkpoint_index(path, world_.size(), meta_);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    char line[160];
    std::snprintf(line, sizeof(line), "%.2f GB in %d part%s, %.1f s (snapshot %.1f s)", bytes / 1e9, world_.size(),
                  world_.size() == 1 ? "" : "s", seconds, snapshot_seconds_);
    summary_ = line;
    // The writer's own time for rank 0's part (the total above runs to the index, written at the
    // next step boundary, or after a final evaluation), and what it took from training in CPU time.
    if (writer_) {
      std::snprintf(line, sizeof(line), "; part written in %.1f s, writer CPU %.2f s", part_seconds_,
                    writer_cpu_seconds_);
      summary_.insert(summary_.size() - 1, line);
    }
  } catch (const Error& e) {
    std::error_code ec;
    std::filesystem::remove_all(parts_directory(path), ec);
    throw;
  }
  if (writer_) {  // the thread is idle: it removes the old checkpoints while training goes on
    raise_prune_error();  // of the prune before (the writer has been waited for since)
    writer_->submit([this, dir = out_dir_, keep = keep_] {
      try {
        prune_checkpoints(dir, keep);
      } catch (const Error& e) {
        prune_error_ = e.message();
      }
    });
  } else {
    prune_checkpoints(out_dir_, keep_);
  }
  return path;
}

void RunSaver::wait_for_prune() {
  if (!writer_) return;
  writer_->wait();
  raise_prune_error();
}

void RunSaver::raise_prune_error() {
  std::string error = std::move(prune_error_);
  prune_error_.clear();
  ND_CHECK_INPUT(error.empty(), error);
}

void RunSaver::fail_pending(const std::string& why) {
  const std::string path = pending_path_;
  pending_path_.clear();
  if (world_.rank() == 0) {
    std::error_code ec;
    std::filesystem::remove_all(parts_directory(path), ec);
  }
  const std::string kept = newest_checkpoint(out_dir_);
  ND_FAIL_INPUT("cannot write checkpoint " << path << ": " << why
                                           << (kept.empty() ? std::string("; no earlier checkpoint exists")
                                                            : "; the newest complete checkpoint stays " + kept));
}

}  // namespace nd::train
