// A one-rank comm whose asynchronous error a test sets, and whose abort says so on stderr and
// counts: the stand-in for a communicator that fails (an NCCL error, a peer flag that never came)
// in the fault-guard tests.
#pragma once
#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

#include "dist/comm/local_comm.h"

namespace nd::dist::testing {

class FailingComm : public LocalComm {
 public:
  void fail(const std::string& error) {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = error;
  }
  std::string async_error() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }
  void abort() override {
    ++aborts_;
    std::fprintf(stderr, "FailingComm aborted\n");
  }
  int aborts() const { return aborts_; }

 private:
  std::mutex mutex_;
  std::string error_;
  std::atomic<int> aborts_{0};
};

}  // namespace nd::dist::testing
