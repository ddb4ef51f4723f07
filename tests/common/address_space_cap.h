// RLIMIT_AS lowered to what the process maps now plus some headroom, for tests of what happens
// when memory runs out: the outcome then does not depend on how much memory the machine has.
#pragma once
#include <sys/resource.h>
#include <unistd.h>

#include <cstddef>
#include <fstream>

namespace nd::test {

class AddressSpaceCap {
 public:
  explicit AddressSpaceCap(size_t headroom) {
    getrlimit(RLIMIT_AS, &before_);
    size_t pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    rlimit capped = before_;
    capped.rlim_cur = pages * static_cast<size_t>(::sysconf(_SC_PAGESIZE)) + headroom;
    applied_ = pages > 0 && setrlimit(RLIMIT_AS, &capped) == 0;
  }
  ~AddressSpaceCap() { setrlimit(RLIMIT_AS, &before_); }
  AddressSpaceCap(const AddressSpaceCap&) = delete;
  AddressSpaceCap& operator=(const AddressSpaceCap&) = delete;
  bool applied() const { return applied_; }

 private:
  rlimit before_{};
  bool applied_ = false;
};

}  // namespace nd::test
