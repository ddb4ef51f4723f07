// `nanodist-lab bench-comm`: the product's bench-comm (cli/bench_comm.h) with two measurements users
// do not run:
//   --impl compare                   allreduce: auto and each of its five choices at every size,
//                                    auto's time over the best choice's (lab/allreduce_compare.h)
//   --load gemm --load-shape MxNxK   a bf16 GEMM beside the timed calls (lab/gemm_load.h); the
//                                    rows' and fits' impl get "+gemm"
//   --peer-table FILE                auto decides from a table bench-comm saved
//                                    (lab/auto_table_file.h)
#pragma once

namespace nd::lab {

// argv[0] is "bench-comm"; returns the exit status, lets nd::Error escape. Collective under mpirun.
int run_lab_bench_comm(int argc, const char* const* argv);

}  // namespace nd::lab
