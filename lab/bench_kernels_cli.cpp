// `nanodist-lab bench-kernels`: flags to KernelBenchOptions, then one line per op and shape as it
// finishes: median time, achieved GB/s and TFLOP/s, and their share of the machine's ceilings.
#include <cstdio>
#include <iostream>

#include "cli/flags.h"
#include "cli/threads.h"
#include "lab/bench_kernels.h"
#include "tensor/device.h"
#include "tensor/error.h"

#ifdef NANODIST_WITH_CUDA
#include "kernels/cudnn/attention_cudnn.h"
#include "tensor/cuda_stream.h"
#endif

namespace nd::lab {
namespace {

using cli::flag;
using cli::FlagSet;
using cli::FlagType;
using cli::ParsedFlags;

// The yardsticks each kernel's rate is printed against: a Hopper GPU's device-to-device copy (read
// and write) and its bf16 GEMM, as measured on the GPU machine.
constexpr double kCopyBytesPerSecond = 4.3e12;
constexpr double kGemmFlopsPerSecond = 790e12;

FlagSet bench_kernels_flags() {
  FlagSet set("bench-kernels", "[flags]   (nanodist-lab of a CUDA build, one GPU)");
  set.group("shape (GPT-2 124M by default)")
      .add(flag("dtype", "bf16", "bf16 or f32"))
      .add(flag("batch", "8", "sequences B", FlagType::Int))
      .add(flag("seq", "1024", "context length T", FlagType::Int))
      .add(flag("embd", "768", "width C", FlagType::Int))
      .add(flag("heads", "12", "attention heads NH", FlagType::Int))
      .add(flag("vocab", "50304", "vocabulary V", FlagType::Int))
      .group("timing")
      .add(flag("iters", "20", "timed launches per op (the median is shown)", FlagType::Int));
  return set;
}

int64_t positive(const ParsedFlags& flags, const char* name) {
  int64_t v = flags.get_int(name);
  ND_CHECK_INPUT(v > 0, flags.origin(name) << " must be positive, got " << v);
  return v;
}

}  // namespace

int run_lab_bench_kernels(int argc, const char* const* argv) {
  const FlagSet set = bench_kernels_flags();
  const ParsedFlags flags = set.parse(argc, argv);
  if (flags.help_requested) {
    std::cout << set.help();
    return 0;
  }
  cli::apply_thread_count(flags.threads);
  const std::string dtype = flags.get_string("dtype");
  ND_CHECK_INPUT(dtype == "bf16" || dtype == "f32", "--dtype must be bf16 or f32, got '" << dtype << "'");
  const int64_t B = positive(flags, "batch"), T = positive(flags, "seq"), C = positive(flags, "embd");
  const int64_t NH = positive(flags, "heads"), V = positive(flags, "vocab"), iters = positive(flags, "iters");
  ND_CHECK_INPUT(C % NH == 0, "--embd " << C << " is not divisible by --heads " << NH);
#ifdef NANODIST_WITH_CUDA
  ND_CHECK_INPUT(cuda_available(), "bench-kernels needs a CUDA GPU, and this machine has none");
  cuda::KernelBenchOptions options;
  options.dtype = parse_dtype(dtype);
  options.batch = B;
  options.seq = T;
  options.embd = C;
  options.heads = NH;
  options.vocab = V;
  options.iters = static_cast<int>(iters);
  std::printf("bench-kernels on %s, %s, B=%lld T=%lld C=%lld NH=%lld V=%lld, median of %d\n",
              cuda_device_name(current_cuda_device()).c_str(), dtype.c_str(), static_cast<long long>(B),
              static_cast<long long>(T), static_cast<long long>(C), static_cast<long long>(NH),
              static_cast<long long>(V), options.iters);
  std::printf("%-22s %-26s %10s %9s %8s %8s %8s\n", "op", "shape", "time(us)", "GB/s", "TFLOP/s", "%copy", "%gemm");
  std::printf("(%%copy of %.1f TB/s, %%gemm of %.0f TFLOP/s)\n", kCopyBytesPerSecond / 1e12,
              kGemmFlopsPerSecond / 1e12);
  std::string no_cudnn;
  if (options.dtype != DType::BF16)
    std::printf("(no cudnn attn rows: cuDNN attention takes bf16)\n");
  else if (!cudnn::attention_available(&no_cudnn))
    std::printf("(no cudnn attn rows: %s)\n", no_cudnn.c_str());
  std::fflush(stdout);
  cuda::run_bench_kernels(options, [](const cuda::KernelBenchRow& r) {
    const double bytes_per_s = r.bytes / r.seconds, flops_per_s = r.flops / r.seconds;
    std::printf("%-22s %-26s %10.1f %9.0f %8.1f %7.1f%% %7.1f%%\n", r.op.c_str(), r.shape.c_str(), r.seconds * 1e6,
                bytes_per_s / 1e9, flops_per_s / 1e12, 100.0 * bytes_per_s / kCopyBytesPerSecond,
                100.0 * flops_per_s / kGemmFlopsPerSecond);
    std::fflush(stdout);
  });
  return 0;
#else
  (void)B, (void)T, (void)V, (void)iters;
  ND_FAIL_INPUT("bench-kernels needs a CUDA build of nanodist (configure with -DNANODIST_CUDA=ON)");
#endif
}

}  // namespace nd::lab
