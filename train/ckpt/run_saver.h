// Saving a run as sharded checkpoints: every rank snapshots the slices it owns
// (model_snapshot.h) and writes its part (checkpoint_part.h), at once or, with --async-save, from a
// host copy (pinned on a GPU) on a background thread while training goes on; once every rank's
// part is durable, rank 0 writes the index (checkpoint_index.h), which makes the checkpoint
// complete, and prunes to --keep (with --async-save on the writer thread). The ranks learn that
// every part is written through the training loop's per-step agreement (part_written/part_failed
// summed over ranks), or through finish().
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "dist/comm/comm.h"
#include "train/ckpt/async_saver.h"
#include "train/ckpt/checkpoint.h"
#include "train/ckpt/fp8_checkpoint.h"
#include "train/ckpt/model_snapshot.h"
#include "train/ckpt/run_state.h"

namespace nd::train {

class RunSaver {
 public:
  // `world`: every rank of the run; dp_rank of dp_size: this rank among the data-parallel
  // replicas (they share the writing of what they hold alike).
  RunSaver(dist::Comm& world, int dp_rank, int dp_size, bool async);
  ~RunSaver();

  // Collective. Starts the save of the run as it is now, after completing the one before. Without
  // async it returns the completed checkpoint's path; with async it returns once the snapshot is
  // taken, with the path of the save before if that completed only now, else "" (this one's path
  // comes from complete_if_written or finish). Nothing is saved when this step was saved already
  // or is the step the run resumed from.
  std::string save(const RunParts& run, const RunCounters& counters);

  // Asynchronous saves: allocates (and touches) the snapshot's host buffers now, at start, so the
  // first save does not pause training for it (page faults, and pinning on a GPU).
  void prepare(const RunParts& run);

  // This rank's part of the pending save: written (1) or failed (1), else 0; for the loop to sum.
  int64_t part_written() const;
  int64_t part_failed() const;
  // With the sums over all ranks: completes the pending save once every part is written (rank 0
  // writes the index) and returns its path; nd::Error when a part failed; "" otherwise.
  std::string complete_if_written(int64_t written, int64_t failed);
  // Collective: waits for the pending save and completes it (its prune included); its path, or ""
  // when none.
  std::string finish();

  bool pending() const { return !pending_path_.empty(); }
  // On rank 0, of the save completed last: "4.25 GB in 2 parts, 11.8 s (snapshot 1.1 s)", the
  // seconds from the save's start to its index; an asynchronous save adds the wall and CPU time its
  // writer thread took for rank 0's part: "; part written in 2.1 s, writer CPU 0.41 s" (the index
  // waits for the next step boundary, at a run's last save for the final evaluation).
  const std::string& last_summary() const { return summary_; }
  // The step a resumed run started from: its checkpoint exists, so it is not written again.
  void set_saved_step(int64_t step) { saved_step_ = step; }

 private:
  SnapshotMode snapshot_mode() const;
  void write_part();                    // this rank's part of the pending save (any thread)
  std::string agree_and_complete();     // collective: all parts written? then the index
  std::string complete_pending();       // rank 0: index and prune; every rank: clear pending
  // The prune after an asynchronous save that completes at the per-step agreement runs on the
  // writer thread (removing gigabytes waits on the disk's discard); finish() waits for it and
  // raises its error, as does the next prune.
  void wait_for_prune();
  void raise_prune_error();
  [[noreturn]] void fail_pending(const std::string& why);

  dist::Comm& world_;
  int dp_rank_, dp_size_;
  std::unique_ptr<BackgroundWriter> writer_;  // null: synchronous saves
  ModelSnapshot snapshot_;
  Fp8StateSnapshot fp8_snapshot_;    // --fp8: on one rank of those holding the tensors
  std::vector<OwnedSlice> slices_;   // this rank's part: the snapshot's slices, then the FP8 state's
  CheckpointData meta_;  // config, state and tokenizer of the pending save
  std::string pending_path_;
  std::string out_dir_;
  int keep_ = 0;
  int64_t saved_step_ = -1;
  std::chrono::steady_clock::time_point started_;  // of the pending save
  double snapshot_seconds_ = 0.0;
  std::string summary_;
  double writer_cpu_seconds_ = 0.0;  // of this rank's part: the writing thread's CPU time (user + system)
  double part_seconds_ = 0.0;        // of this rank's part: the writing's wall time
  std::atomic<int> part_state_{0};  // 0 writing or none, 1 written, 2 failed
  std::string part_error_;          // set by write_part before part_state_ becomes 2
  std::string prune_error_;         // set by the prune job on the writer thread
};

}  // namespace nd::train
