// `nanodist --version`: the version, the commit it was built from, and the build's options.
#pragma once
#include <string>

namespace nd::cli {

// "nanodist 0.1.0 (commit 1a2b3c4d5e6f)\nbuild: CUDA 12.4, cuDNN attention yes, NCCL 2.21.5, ..."
std::string version_text();

}  // namespace nd::cli
