// The lock that makes an output directory one process's at a time: OUT/.nanodist.lock, held with
// flock(2) for the life of the run, so a second `nanodist train` on the same --out (a scheduler's
// requeue while the old job still lives) is refused, and a killed run never leaves a stale lock
// (the kernel drops a dead process's locks).
#pragma once
#include <string>

namespace nd::train {

class RunDirLock {
 public:
  // Takes the lock of `out_dir` (which must exist); nd::Error (input) naming the directory and
  // the holder's pid when another process holds it.
  explicit RunDirLock(const std::string& out_dir);
  ~RunDirLock();
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

  // OUT/.nanodist.lock
  static std::string path_for(const std::string& out_dir);

 private:
  int fd_ = -1;
};

}  // namespace nd::train
