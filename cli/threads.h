// How many CPU threads the BLAS and the OpenMP loops use: --threads N where given, else
// OMP_NUM_THREADS where set, else the physical cores shared out over the ranks on this node.
// More threads than cores (hyper-threads, or ranks x threads > cores) makes every step wait
// for the slowest, descheduled thread.
#pragma once
#include <cstdint>

namespace nd::cli {

// Physical cores of this machine (distinct core ids in /proc/cpuinfo; the logical CPUs where it
// says nothing), at least 1.
int physical_cores();

// Applies --threads (`flag`: -1 = not given, 0 = physical cores); returns the threads in use.
int apply_thread_count(int64_t flag);

}  // namespace nd::cli
