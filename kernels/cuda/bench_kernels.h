// `nanodist bench-kernels`: times every CUDA kernel at GPT-2 124M shapes and prints, per op and
// shape, the median time, achieved GB/s and TFLOP/s, and their share of the machine's ceilings.
#pragma once

namespace nd::cuda {

// Flags: --dtype bf16|f32 (bf16), --batch 8, --seq 1024, --embd 768, --heads 12, --vocab 50304,
// --iters 20. Returns the process exit status; prints to stdout (this is a CLI entry point).
int run_bench_kernels_cli(int argc, char** argv);

}  // namespace nd::cuda
