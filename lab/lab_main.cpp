// nanodist-lab: the lab's measurements (lab/bench_comm_lab.h, lab/bench_kernels.h). Errors end as one line
// `nanodist: error: ...` (once under mpirun), exit status 1, as nanodist's do.
#include <cstring>
#include <exception>
#include <iostream>

#include "cli/error_line.h"
#include "lab/bench_comm_lab.h"
#include "lab/bench_kernels.h"

int main(int argc, char** argv) {
  try {
    if (argc >= 2 && std::strcmp(argv[1], "bench-comm") == 0) return nd::lab::run_lab_bench_comm(argc - 1, argv + 1);
    if (argc >= 2 && std::strcmp(argv[1], "bench-kernels") == 0)
      return nd::lab::run_lab_bench_kernels(argc - 1, argv + 1);
    std::cerr << "usage: nanodist-lab bench-comm [bench-comm flags] [--impl compare] [--load gemm --load-shape MxNxK]\n"
                 "       nanodist-lab bench-kernels [--dtype bf16|f32] [--batch B --seq T --embd C --heads NH --vocab V]"
              << std::endl;
    return 1;
  } catch (const std::exception& e) {
    std::cout.flush();
    const bool verbose = nd::cli::verbose_errors(argc, argv);
    if (nd::cli::print_error_here(e, verbose)) std::cerr << nd::cli::error_line(e, verbose) << std::endl;
  }
  return 1;
}
