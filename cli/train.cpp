// `nanodist train`: flags to TrainConfig, the world communicator, the training run (which prints
// its step lines on rank 0, after this file's warnings and header), and a one-line summary.
#include <sys/resource.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/device_flag.h"
#include "cli/subcommand.h"
#include "cli/train_flags.h"
#include "cli/fault_guard_for.h"
#include "cli/op_table.h"
#include "dist/comm/node_map.h"
#include "dist/comm/world.h"
#include "train/run/exit_status.h"
#include "train/ckpt/init_from.h"
#include "train/metrics.h"
#include "train/schedule_warnings.h"
#include "train/trainer.h"

namespace nd::cli {
namespace {

using train::TrainConfig;
using train::TrainResult;

std::string final_summary_line(const TrainResult& r) {
  char line[256];
  std::snprintf(line, sizeof(line), "done: %lld steps | best val loss %s | %.2fM params | %s tokens%s",
                static_cast<long long>(r.steps_done), train::format_loss(r.best_val_loss).c_str(),
                static_cast<double>(r.params) / 1e6,
                train::format_rate(static_cast<double>(r.tokens)).c_str(), r.diverged ? " | diverged" : r.stopped_by_signal ? " | stopped by a signal, resume with --resume" : "");
  std::string out = line;
  if (r.peak_device_bytes > 0) {
    std::snprintf(line, sizeof(line), " | peak GPU memory %.2f GiB (tensors asked for %.2f)",
                  static_cast<double>(r.peak_device_bytes) / (1 << 30),
                  static_cast<double>(r.peak_requested_device_bytes) / (1 << 30));
    out += line;
  } else {
    // The CPU: the process's peak resident memory (ru_maxrss, KiB on Linux).
    struct rusage usage {};
    if (getrusage(RUSAGE_SELF, &usage) == 0) {
      std::snprintf(line, sizeof(line), " | peak RSS %.2f GiB", static_cast<double>(usage.ru_maxrss) / (1 << 20));
      out += line;
    }
  }
  return out;
}

// Dense peak FLOP/s of the GPU for the dtype the model computes in, for MFU; 0 (the step line
// then shows GFLOP/s) where we do not know it. Spec sheet figures of the SXM parts: bf16 tensor
// cores 989 TFLOP/s on H100 and H200; true f32 (no TF32) 67 TFLOP/s.
double peak_flops(const Device& device, DType dtype) {
  if (!device.is_cuda()) return 0.0;
  const std::string name = cuda_device_name(device.index);
  const bool hopper_sxm = (name.find("H100") != std::string::npos && name.find("PCIe") == std::string::npos) ||
                          name.find("H200") != std::string::npos;
  if (!hopper_sxm) return 0.0;
  return dtype == DType::BF16 ? 989e12 : 67e12;
}

int run_train(const ParsedFlags& flags) {
  device_from_flags(flags);  // a GPU where there is none: the error says how to run on the CPU
  TrainConfig config = train_config_from_flags(flags);
  // --init-from: the model's shape is the source's (flags that set it must agree).
  if (!config.checkpoint.init_from.empty())
    train::take_model_shape(config, train::describe_init_source(config.checkpoint.init_from),
                            [&flags](const std::string& flag) { return flags.has(flag); });
  train::resolve_train_config(config);
  // Under mpirun every rank joins the world communicator (MPI for CPU, NCCL for CUDA, which
  // also picks this rank's GPU); alone it is a one-rank LocalComm.
  // Training keeps NCCL's default send/recv channels even for --collectives ring: the wider
  // communicator that speeds the ring up in bench-comm takes SMs from the backward kernels the
  // all-reduce overlaps (ring DDP scaled measurably worse with it, docs/benchmarks/).
  std::unique_ptr<dist::Comm> comm = dist::make_world_comm(config.parallel.device, /*ring_transfers=*/false);
  if (comm->device().is_cuda()) config.parallel.device = comm->device();
  train::validate_train_config(config, comm->size());
  train::RunContext context;
  context.comm = comm.get();
  context.peak_flops = peak_flops(config.parallel.device, config.precision.dtype);
  context.log = comm->rank() == 0 ? &std::cout : nullptr;
  std::unique_ptr<dist::FaultGuard> guard =
      fault_guard_for(*comm, config.parallel.comm_timeout, config.parallel.heartbeat_timeout);
  context.fault_guard = guard.get();
  context.hash_parameters = false;  // the tests' fingerprint: tens of seconds at the end of a large run
  // Collective: where the ranks are, for the header's nodes line.
  const dist::NodeMap nodes = dist::discover_nodes(*comm, config.parallel.ranks_per_node);
  // The warnings and the header go out once the trainer has checked its inputs: an input error
  // it finds (the data, --out, a checkpoint to resume) is then the only line.
  context.before_first_line = [&config, &comm, &nodes] {
    for (const std::string& warning : train::schedule_warnings(config))
      std::cerr << "nanodist: warning: " << warning << std::endl;
    const int dp = config.parallel.dp_size(comm->size());
    const train::TrainConfig::Model& m = config.model;
    const train::TrainConfig::Parallel& p = config.parallel;
    std::cout << "train: " << m.n_layer << " layers, " << m.n_head << " heads, " << m.n_embd << " wide, context "
              << m.block_size << ", " << config.schedule.max_iters << " steps on " << p.device.str() << " x "
              << comm->size() << " rank(s) (" << comm->backend() << "; grid tp " << p.tp << " x pp " << p.pp << " x dp " << dp
              << ")\n"
              << "global batch " << config.data.batch_size * config.data.grad_accum * dp
              << " sequences = " << config.data.batch_size << " per rank x " << config.data.grad_accum
              << " accumulation x " << dp << " data-parallel rank(s)"
              << (comm->size() > 1 ? ", collectives " + std::string(dist::algorithm_name(p.collectives))
                                   : std::string())
              << "\n"
              << "nodes: " << dist::describe_placement(nodes, p.tp, p.pp) << std::endl;
  };
  TrainResult result = train::run_training(config, context);
  if (guard) guard->finish();
  if (comm->rank() == 0) std::cout << format_op_table(result) << final_summary_line(result) << std::endl;
  if (result.stopped_by_signal) return train::kExitStoppedBySignal;
  return result.diverged ? train::kExitDiverged : train::kExitDone;
}

}  // namespace

Subcommand train_command() {
  return {"train", "train a GPT on prepared data (CPU, GPU, or many GPUs under mpirun)", train_flag_set, run_train};
}

}  // namespace nd::cli
