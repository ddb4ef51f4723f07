// flock(2) on OUT/.nanodist.lock; the file keeps the holder's pid for the refusal message.
#include "train/run/run_dir_lock.h"

#include <cerrno>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "tensor/error.h"

namespace nd::train {

std::string RunDirLock::path_for(const std::string& out_dir) { return out_dir + "/.nanodist.lock"; }

RunDirLock::RunDirLock(const std::string& out_dir) {
  const std::string path = path_for(out_dir);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ND_CHECK_INPUT(fd_ >= 0, "cannot open the lock file " << path << ": " << std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int why = errno;
    char holder[32] = {0};
    const ssize_t n = ::pread(fd_, holder, sizeof(holder) - 1, 0);
    std::string pid = n > 0 ? std::string(holder, static_cast<size_t>(n)) : std::string();
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    ::close(fd_);
    fd_ = -1;
    ND_CHECK_INPUT(why != EWOULDBLOCK, "--out " << out_dir << " is in use by another nanodist run"
                                                << (pid.empty() ? std::string() : " (pid " + pid + ")")
                                                << "; wait for it to end, or pick another --out");
    ND_FAIL_INPUT("cannot lock " << path << ": " << std::strerror(why));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
    // The pid is only for the message a second run prints; the lock itself holds.
  }
}

RunDirLock::~RunDirLock() {
  if (fd_ < 0) return;
  ::flock(fd_, LOCK_UN);
  ::close(fd_);
}

}  // namespace nd::train
