// `nanodist plan`: the communication of one training step predicted from a GPT shape and a layout
// (the train flags or a train config, plus --dp, --zero where train has none) with the alpha-beta
// table of `bench-comm --fit-table` (or the built-in 2-GPU NVLink one): each collective's group,
// size, calls per step, whether the schedule hides it, and the model's time; totals last.
#include <cstdio>
#include <set>
#include <string>

#include "cli/subcommand.h"
#include "cli/train_flags.h"
#include "dist/parallel/plan/comm_plan.h"
#include "tensor/error.h"

namespace nd::cli {
namespace {

FlagSet plan_flags() {
  FlagSet train = train_flag_set();
  FlagSet set("plan",
              "[--config TRAIN_CONF] [train flags: --n-layer, --tp, --pp, --batch-size, --dtype ...] --dp N [--zero Z] "
              "[--table FITS.csv] [--impl native|ring|...]");
  // Every train flag is read (so that a run's config file serves as it is), but only those that
  // shape the step's communication are listed.
  const std::set<std::string> shown{"n-layer", "n-head",   "n-embd", "block-size", "vocab-size", "bias",
                                    "batch-size", "grad-accum", "device", "dtype", "grad-dtype", "tp", "pp",
                                    "sequence-parallel", "tp-overlap", "bucket-mb", "zero"};
  for (FlagSpec spec : train.specs()) {
    if (spec.name == "config") continue;
    spec.hidden = shown.count(spec.name) == 0;
    set.add(spec);
  }
  set.allow_config_file();
  set.group("plan");
  set.add(flag("dp", "1", "data-parallel size (the world is dp x tp x pp)", FlagType::Int));
  if (!train.find("zero")) set.add(flag("zero", "0", "ZeRO stage: 0 (all-reduce), 1, 2 or 3", FlagType::Int));
  set.add(flag("table", "", "alpha-beta fits from bench-comm --fit-table (default: built in, 2 GPUs over NVLink)"));
  set.add(flag("impl", "native",
                "the table's implementation to time with (native, ring, ...); its idle GPU's fits (rows of the lab's "
                "bench-comm --load gemm, impl '+gemm', are not used)"));
  set.add(flag("gemm-tflops", "600",
               "rate of the GEMMs beside overlapped collectives (the compute that hides them); the default: GPT-2 "
               "124M's backward linears on one Hopper GPU (docs/benchmarks/)",
               FlagType::Float));
  set.add(flag("norm-backward-ps", "4.17",
               "LayerNorm backward, ps per element of the B x T x C activation: the kernel a data-parallel bucket "
               "readied by the MLP's or the qkv linear's backward waits for; the default as measured on one Hopper GPU",
               FlagType::Float));
  set.add(flag("add-backward-ps", "1.36",
               "residual add backward, ps per activation element: what a bucket readied by a LayerNorm's backward "
               "waits for; the default as measured on one Hopper GPU",
               FlagType::Float));
  set.add(flag("backward-tail-us", "200",
               "backward after the last block's GEMMs (ln_1, the embedding's backward): what the buckets of the first "
               "block hide behind; the default as traced on one Hopper GPU",
               FlagType::Float));
  return set;
}

int run_plan_command(const ParsedFlags& flags) {
  const train::TrainConfig c = train_config_from_flags(flags);
  dist::PlanShape s;
  s.n_layer = c.model.n_layer;
  s.n_head = c.model.n_head;
  s.n_embd = c.model.n_embd;
  s.block_size = c.model.block_size;
  s.vocab_size = c.model.vocab_size > 0 ? c.model.vocab_size : 50257;
  s.bias = c.model.bias;
  s.on_cuda = c.parallel.device.is_cuda();
  s.batch_size = c.data.batch_size;
  s.grad_accum = c.data.grad_accum;
  s.tp = c.parallel.tp;
  s.pp = c.parallel.pp;
  s.dp = static_cast<int>(flags.get_int("dp"));
  s.zero = static_cast<int>(flags.get_int("zero"));
  s.sequence_parallel = c.parallel.sequence_parallel && c.parallel.tp > 1;
  s.tp_overlap = c.parallel.tp_overlap;
  s.act_bytes = c.precision.dtype == DType::F32 ? 4 : 2;
  s.param_bytes = s.act_bytes;
  s.grad_bytes = !c.precision.grad_dtype ? s.param_bytes : (*c.precision.grad_dtype == DType::F32 ? 4 : 2);
  s.bucket_mb = c.parallel.bucket_mb;
  s.gemm_tflops = flags.get_double("gemm-tflops");
  s.backward_tail_us = flags.get_double("backward-tail-us");
  s.norm_backward_ps = flags.get_double("norm-backward-ps");
  s.add_backward_ps = flags.get_double("add-backward-ps");
  ND_CHECK_INPUT(s.dp >= 1, "--dp must be >= 1, got " << s.dp);
  const std::string table_path = flags.get_string("table"), impl = flags.get_string("impl");
  const std::vector<dist::AlphaBetaFit> table =
      table_path.empty() ? dist::default_fit_table() : dist::read_fit_table(table_path);
  const dist::StepPlan plan = dist::plan_step(s, table, impl);

  std::printf("# nanodist plan: GPT %dL %dH %dd, T %d, vocab %d; dp %d x tp %d x pp %d%s, ZeRO %d; batch %d x %d "
              "micro-batch(es); %s activations; table %s, impl %s\n",
              s.n_layer, s.n_head, s.n_embd, s.block_size, s.vocab_size, s.dp, s.tp, s.pp,
              s.sequence_parallel ? " (sequence parallel)" : "", s.zero, s.batch_size, s.grad_accum,
              s.act_bytes == 4 ? "f32" : "bf16", table_path.empty() ? "built-in (2 GPUs, NVLink)" : table_path.c_str(),
              impl.c_str());
  std::printf("# us/call: the idle GPU's fit plus waits, the GEMM in flight the call waits for before it runs (at "
              "%.0f TFLOP/s; all: the schedule hides the call whole)\n",
              s.gemm_tflops);
  std::printf("%-9s %-13s %5s %13s %6s %10s %9s %11s %11s  %-7s %s\n", "group", "op", "ranks", "bytes", "calls",
              "us/call", "waits", "us/step", "exposed/st", "exposed", "what");
  for (const dist::PlannedCall& call : plan.calls) {
    char per_call[32] = "-", per_step[32] = "-", exposed[32] = "-", beside[32] = "-";
    if (call.time_us >= 0) {
      std::snprintf(per_call, sizeof per_call, "%.1f", call.time_us);
      std::snprintf(per_step, sizeof per_step, "%.1f", call.time_us * static_cast<double>(call.calls));
      std::snprintf(exposed, sizeof exposed, "%.1f", call.exposed_us * static_cast<double>(call.calls));
    }
    if (call.hidden && call.beside_us >= dist::kBesideAll) std::snprintf(beside, sizeof beside, "all");
    else if (call.hidden) std::snprintf(beside, sizeof beside, "%.1f", call.beside_us);
    const char* state = !call.hidden || call.time_us < 0 ? (call.hidden ? "hidden" : "exposed")
                        : call.exposed_us <= 0        ? "hidden"
                                                      : "partly";
    std::printf("%-9s %-13s %5d %13lld %6lld %10s %9s %11s %11s  %-7s %s\n", call.group.c_str(), call.op.c_str(),
                call.ranks, static_cast<long long>(call.bytes), static_cast<long long>(call.calls), per_call, beside,
                per_step, exposed, state, call.what.c_str());
  }
  std::printf("# per step: %.1f us of communication, %.1f us exposed (the rest overlaps backward or other "
              "compute)\n",
              plan.total_us, plan.exposed_us);
  for (const std::string& missing : plan.missing)
    std::printf("# no fit for %s in the table: those calls are untimed\n", missing.c_str());
  return 0;
}

}  // namespace

Subcommand plan_command() {
  return {"plan", "predict a step's communication from a GPT shape and an alpha-beta table", plan_flags,
          run_plan_command};
}

}  // namespace nd::cli
