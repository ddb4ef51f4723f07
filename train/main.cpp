// nanodist: one binary, subcommands prepare | train | sample | ablate | sweep | bench-comm | bench-kernels.
// Every error ends here as one line `nanodist: error: <what> (<where>)` and a non-zero exit.
#include <cstring>
#include <exception>
#include <iostream>
#include <string>

#include "dist/comm_bench.h"
#include "experiments/commands.h"
#include "tensor/error.h"
#include "train/commands.h"

#if defined(NANODIST_WITH_CUDA) && __has_include("kernels/cuda/bench_kernels.h")
#include "kernels/cuda/bench_kernels.h"
#define ND_HAVE_KERNEL_BENCH 1
#endif

namespace {

int dispatch(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    std::cout << nd::train::subcommands_help();
    return argc < 2 ? 1 : 0;
  }
  const std::string command = argv[1];
  const char* const* args = argv + 1;  // args[0] is the subcommand
  int count = argc - 1;
  if (command == "prepare") return nd::train::run_prepare_command(count, args);
  if (command == "train") return nd::train::run_train_command(count, args);
  if (command == "sample") return nd::train::run_sample_command(count, args);
  if (command == "ablate") return nd::experiments::run_ablate_command(count, args);
  if (command == "sweep") return nd::experiments::run_sweep_command(count, args);
  if (command == "bench-comm") return nd::dist::run_bench_comm_cli(count, argv + 1);
  if (command == "bench-kernels") {
#ifdef ND_HAVE_KERNEL_BENCH
    return nd::cuda::run_bench_kernels_cli(count, argv + 1);
#else
    ND_FAIL("bench-kernels needs a CUDA build (configure with -DNANODIST_CUDA=ON)");
#endif
  }
  ND_FAIL("unknown command '" << command << "' (commands: prepare, train, sample, ablate, sweep, bench-comm, bench-kernels)");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return dispatch(argc, argv);
  } catch (const nd::Error& e) {
    std::cout.flush();
    std::cerr << "nanodist: error: " << e.message() << " (" << e.where() << ")" << std::endl;
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "nanodist: error: " << e.what() << " (" << argv[0] << ")" << std::endl;
  }
  return 1;
}
