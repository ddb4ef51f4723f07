// TrainConfig: every flag of `nanodist train` (CLI.md) with its default, in typed sections (model,
// data, optim, schedule, parallel, precision, checkpoint, observe, debug). A flag's text is parsed
// once, when it is read (set_train_config_field), into the type the code uses: an enum, a Device,
// a DType; train_config_fields gives the text back (the CLI builds its flag table from it,
// checkpoints and OUT/run.conf record it). validate_train_config checks values that cannot work
// together (n_embd % n_head, accumulation vs world size, ...) before anything is allocated.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "train/config_enums.h"
#include "train/config_value.h"
#include "train/loss_scaler.h"
#include "train/lr_schedule.h"

namespace nd::train {

struct TrainConfig {
  struct Model {
    int n_layer = 6;
    int n_head = 6;
    int n_embd = 384;
    int block_size = 256;
    int vocab_size = 0;  // 0 = from the data; files that record none (nanoGPT's) need it
    double dropout = 0.0;
    bool bias = true;
    bool no_layernorm = false;  // ablations
    bool no_residual = false;
    AttentionBackend attention = AttentionBackend::Auto;
    // Activations recomputed in backward instead of kept (nn/layers.h Recompute).
    nn::Recompute recompute = nn::Recompute::None;
  };
  struct Data {
    std::string dir;  // train.bin, val.bin, tokenizer.txt; or llm.c shards, nanoGPT .bin (data/token_dataset.h)
    // batch_size is per rank and micro-step; grad_accum counts each rank's micro-steps per
    // optimizer step, so the global batch is batch_size * grad_accum * data-parallel size.
    int batch_size = 64;
    int grad_accum = 1;
  };
  struct Optim {  // AdamW and its learning rate
    double lr = 1e-3;
    double min_lr = 1e-4;
    double weight_decay = 0.1;
    double beta1 = 0.9;
    double beta2 = 0.99;
    double grad_clip = 1.0;
  };
  struct Schedule {  // steps, the learning rate's warmup and decay, evaluations, the time budget
    int max_iters = 5000;
    int warmup_iters = 100;
    int lr_decay_iters = -1;  // -1 = max_iters (resolve_train_config)
    LrShape lr_schedule = LrShape::Cosine;  // the decay's shape (train/lr_schedule.h)
    double decay_frac = 0.2;                // wsd: the share of the decay span spent decaying
    int eval_interval = 250;
    int eval_iters = 20;
    double max_seconds = 0.0;
    bool fit_schedule = false;  // with max_seconds: steps, warmup and decay fitted to the time
  };
  struct Parallel {
    Device device = Device::cpu();  // where every rank runs (cuda: each rank its own GPU)
    int tp = 1;
    int pp = 1;  // pipeline stages (train/pipeline_schedule.h)
    PipelineKind pp_schedule = PipelineKind::OneFOneB;
    std::string pp_layers;  // blocks per stage, "3,3,2"; "" = equal stages (train/pipeline_stages.h)
    int pp_virtual = 1;     // model chunks per rank (interleaved)
    bool sequence_parallel = false;  // tp must divide block_size; no effect at tp 1
    bool tp_overlap = true;          // sequence parallelism: chunked collectives overlap the GEMMs
    dist::Algorithm collectives = dist::Algorithm::Native;  // alias --allreduce
    bool allow_cross_node_tp = false;  // a tp group spanning nodes warns instead of failing
    int ranks_per_node = 0;  // > 0: every k consecutive ranks count as a node (dist/comm/node_map.h)
    double bucket_mb = 25.0;
    int zero = 0;  // ZeRO stage of the data-parallel engine: 0 (all-reduce), 1, 2 or 3 (dist/parallel/data_parallel.h)
    // Seconds a step or collective may take before the rank aborts, and seconds a silent peer is
    // given before it is declared gone (0 = off; dist/parallel/fault_guard.h).
    double comm_timeout = 600.0;
    double heartbeat_timeout = 15.0;

    // Data-parallel size for a world of `world_size` ranks.
    int dp_size(int world_size) const { return world_size / (tp * pp); }
  };
  struct Precision {  // train/precision.h turns these into a PrecisionPolicy
    DType dtype = DType::F32;
    std::optional<DType> grad_dtype;  // none = the --dtype's default (train/precision.h)
    // --loss-scale: dynamic or fixed (train/loss_scaler.h); none = auto (dynamic under fp16, else off).
    std::optional<LossScalerOptions> loss_scale;
    bool master_weights = true;  // false: bf16 parameters updated in place, no f32 master copy
    bool fp8 = false;            // the linears' GEMMs in FP8 with delayed scaling (Hopper)
    Fp8Layers fp8_layers;
    int fp8_amax_history = 1024;  // steps of amax history behind each quantised tensor's scale
  };
  struct Checkpoint {  // the run directory and the state in it
    std::string out_dir;  // checkpoints, metrics.jsonl, run.conf
    bool resume = false;
    int interval = -1;       // -1: at every evaluation (--eval-interval), so a preempted run can resume
    int keep = 3;
    bool overwrite = false;  // a fresh run may delete the run already in out_dir (train/run/output_dir.h)
    bool disabled = false;   // --no-checkpoint: write none, not even at the end (benchmarks of large models)
    std::string init_from;   // a checkpoint (file or run dir) or a Hugging Face GPT-2 dir to start from
    AsyncSave async_save = AsyncSave::Auto;
  };
  struct Observe {
    int log_interval = 10;
    int layer_stats = 0;  // per-layer statistics every N steps (train/layer_stats.h; 0 = off)
    // A Chrome-trace timeline of steps trace_steps ("a:b") into this file (train/step_trace.h; "" = off).
    std::string trace;
    std::string trace_steps = "3:4";
    // The op timer's table (tensor/op_timer.h) at the end: device time per op and shape over the steps after the first two.
    bool op_times = false;
    // Each rank's pipeline passes of a step into this directory (train/pipeline_timeline.h; "" = off).
    std::string pp_timeline;
  };
  struct Debug {  // reproducibility and what a run does when something goes wrong
    uint64_t seed = 1337;
    bool cuda_graph = true;
    int skip_nonfinite = 0;  // updates with a non-finite loss or gradient norm dropped before the run stops
  };

  Model model;
  Data data;
  Optim optim;
  Schedule schedule;
  Parallel parallel;
  Precision precision;
  Checkpoint checkpoint;
  Observe observe;
  Debug debug;
};

// Every train flag with its type and current value as text (checkpoints record them all; the
// fields of TrainConfig{} are the flags' defaults).
struct ConfigField {
  std::string name;  // flag name, dash-separated
  FlagType type;
  std::string text;
  std::string help;   // one line for --help
  std::string group;  // heading in --help: paths, model, batch, ...
  std::vector<std::string> aliases;  // other names the flag and config key answer to
};
std::vector<ConfigField> train_config_fields(const TrainConfig& config);

// Sets the field `name` from text of its type; `origin` names where the text came from ("--lr on
// the command line") in the input error for a value out of the field's range.
void set_train_config_field(TrainConfig& config, const std::string& name, const std::string& text,
                            const std::string& origin);

// Fills the defaults that follow other fields: lr_decay_iters -1 becomes max_iters.
void resolve_train_config(TrainConfig& config);

// nd::Error naming the flags at fault when the config cannot run on `world_size` ranks.
void validate_train_config(const TrainConfig& config, int world_size);

}  // namespace nd::train
