// The train flag table is one list of (flag, TrainConfig member) bindings, so a flag's name, its
// default (read from a default-constructed TrainConfig) and its field never drift apart.
#include "train/config.h"
#include "train/step_trace.h"

#include <functional>
#include <sstream>
#include <vector>

#include "tensor/device.h"
#include "tensor/dtype.h"
#include "train/precision.h"
#include "tensor/error.h"
#include "train/model_config.h"
#include "train/pipeline_stages.h"

namespace nd::train {
namespace {

// `apply` sets the field from (text, origin); `text` reads it back.
struct Binding {
  ConfigField field;
  std::function<void(TrainConfig&, const std::string&, const std::string&)> apply;
  std::function<std::string(const TrainConfig&)> text;
};

std::string text_of(int v) { return std::to_string(v); }
std::string text_of(uint64_t v) { return std::to_string(v); }
std::string text_of(bool v) { return v ? "true" : "false"; }
std::string text_of(const std::string& v) { return v; }
// The shortest text that reads back as exactly `v` (help shows 0.001, checkpoints lose nothing).
std::string text_of(double v) {
  for (int precision = 6;; ++precision) {
    std::ostringstream out;
    out.precision(precision);
    out << v;
    if (precision >= 17 || std::stod(out.str()) == v) return out.str();
  }
}

class BindingList {
 public:
  explicit BindingList(std::string group) : group_(std::move(group)) {}
  void group(std::string g) { group_ = std::move(g); }

  void add(const char* name, int TrainConfig::*field, const char* help) {
    push(name, FlagType::Int, field, help, [=](TrainConfig& c, const std::string& text, const std::string& origin) {
      int64_t v = parse_int_value(text, origin);
      ND_CHECK_INPUT(v >= INT32_MIN && v <= INT32_MAX, "value " << v << " of " << origin << " is out of range");
      c.*field = static_cast<int>(v);
    });
  }
  void add(const char* name, uint64_t TrainConfig::*field, const char* help) {
    push(name, FlagType::Int, field, help, [=](TrainConfig& c, const std::string& text, const std::string& origin) {
      int64_t v = parse_int_value(text, origin);
      ND_CHECK_INPUT(v >= 0, origin << " must be >= 0, got " << v);
      c.*field = static_cast<uint64_t>(v);
    });
  }
  void add(const char* name, double TrainConfig::*field, const char* help) {
    push(name, FlagType::Float, field, help,
         [=](TrainConfig& c, const std::string& text, const std::string& origin) {
           c.*field = parse_double_value(text, origin);
         });
  }
  void add(const char* name, bool TrainConfig::*field, const char* help) {
    push(name, FlagType::Bool, field, help, [=](TrainConfig& c, const std::string& text, const std::string& origin) {
      c.*field = parse_bool_value(text, origin);
    });
  }
  void add(const char* name, std::string TrainConfig::*field, const char* help) {
    push(name, FlagType::String, field, help,
         [=](TrainConfig& c, const std::string& text, const std::string&) { c.*field = text; });
  }
  // Another name for the flag added last (an old name kept working).
  void alias(const char* name) { bindings_.back().field.aliases.push_back(name); }
  const std::vector<Binding>& bindings() const { return bindings_; }

 private:
  template <typename T>
  void push(const char* name, FlagType type, T TrainConfig::*field, const char* help,
            std::function<void(TrainConfig&, const std::string&, const std::string&)> apply) {
    ConfigField f{name, type, text_of(defaults_.*field), help, group_, {}};
    bindings_.push_back({f, std::move(apply), [field](const TrainConfig& c) { return text_of(c.*field); }});
  }

  TrainConfig defaults_;
  std::string group_;
  std::vector<Binding> bindings_;
};

const std::vector<Binding>& train_bindings() {
  static const std::vector<Binding> bindings = [] {
    BindingList b("paths");
    using C = TrainConfig;
    b.add("data", &C::data_dir,
          "directory with train.bin, val.bin, tokenizer.txt, or llm.c shards (dir or glob), or nanoGPT's "
          "train.bin/val.bin (required)");
    b.add("out", &C::out_dir, "directory for checkpoints and metrics.jsonl (required)");
    b.group("model");
    b.add("n-layer", &C::n_layer, "transformer blocks");
    b.add("n-head", &C::n_head, "attention heads (must divide n-embd)");
    b.add("n-embd", &C::n_embd, "embedding width");
    b.add("block-size", &C::block_size, "context length in tokens");
    b.add("dropout", &C::dropout, "dropout probability");
    b.add("bias", &C::bias, "biases in linear layers and LayerNorm");
    b.add("no-layernorm", &C::no_layernorm, "ablation: remove every LayerNorm");
    b.add("no-residual", &C::no_residual, "ablation: remove the residual connections");
    b.add("vocab-size", &C::vocab_size,
          "vocabulary size for data that records none (nanoGPT .bin; llm.c: 50257 GPT-2, 128256 Llama 3); 0 = from "
          "the data");
    b.group("batch");
    b.add("batch-size", &C::batch_size, "sequences per rank per micro-step");
    b.add("grad-accum", &C::grad_accum,
          "micro-steps per rank per optimizer step (global batch = batch-size x grad-accum x ranks)");
    b.group("schedule");
    b.add("max-iters", &C::max_iters, "optimizer steps");
    b.add("lr", &C::lr, "peak learning rate");
    b.add("min-lr", &C::min_lr, "learning rate after the cosine decay");
    b.add("warmup-iters", &C::warmup_iters, "linear warmup steps (0 = no warmup)");
    b.add("lr-decay-iters", &C::lr_decay_iters, "step where the cosine decay reaches min-lr (-1 = --max-iters)");
    b.add("weight-decay", &C::weight_decay, "AdamW decoupled weight decay (matrices and embeddings only)");
    b.add("beta1", &C::beta1, "AdamW beta1");
    b.add("beta2", &C::beta2, "AdamW beta2");
    b.add("grad-clip", &C::grad_clip, "clip the global gradient norm to this (0 = no clipping)");
    b.group("eval/log");
    b.add("eval-interval", &C::eval_interval, "evaluate train and val loss every N steps (0 = only at the end)");
    b.add("eval-iters", &C::eval_iters, "batches per split in an evaluation");
    b.add("log-interval", &C::log_interval, "print a step line every N steps");
    b.group("system");
    b.add("device", &C::device, "cpu or cuda");
    b.add("dtype", &C::dtype,
          "f32, bf16 or fp16 (bf16 needs cuda; fp16 on the cpu emulates the GPU's f16 kernels, slowly, for tests; "
          "f32 master weights and optimizer state either way)");
    b.add("grad-dtype", &C::grad_dtype,
          "f32, bf16 or f16: gradients accumulated over micro-batches and reduced in this dtype (default: --dtype, "
          "but f32 under fp16, whose tiny gradients the unscale would flush to zero; f32 under bf16 is Megatron's "
          "main_grad)");
    b.add("loss-scale", &C::loss_scale,
          "scale of the loss before backward, gradients divided by it before clipping, overflowing steps skipped: "
          "dynamic (65536, x2 after 2000 finite steps, x0.5 on overflow), "
          "a fixed number (1 = off), or auto (dynamic under fp16, else off)");
    b.add("master-weights", &C::master_weights,
          "keep f32 master weights beside bf16 or fp16 parameters (false: the update rounds into the 16-bit "
          "weights in place, an ablation)");
    b.add("fp8", &C::fp8,
          "run the linears' GEMMs in FP8 (E4M3 forward, E5M2 gradients, delayed scaling over an amax history of "
          "--fp8-amax-history steps; needs --dtype bf16 on a GPU with FP8 tensor cores, --tp 1, and batch-size x block-size, n-embd "
          "multiples of 16); attention, LayerNorm and softmax stay bf16, the loss reads bf16 logits and is f32");
    b.add("fp8-layers", &C::fp8_layers, "with --fp8: all, or a comma list of attn, mlp, head");
    b.add("fp8-amax-history", &C::fp8_amax_history,
          "with --fp8: the steps of amax history each quantised tensor's scale is taken from (the max over them); "
          "a resumed run whose checkpoint holds longer histories keeps their newest amaxes");
    b.add("seed", &C::seed, "seed of parameter init, dropout and batch sampling");
    b.add("tp", &C::tp, "tensor-parallel size");
    b.add("pp", &C::pp,
          "pipeline-parallel size: stages of contiguous blocks, one per rank of a pipeline group (data-parallel "
          "size = ranks / (tp x pp)); the micro-batches of a step are its --grad-accum");
    b.add("pp-schedule", &C::pp_schedule,
          "pipeline schedule at --pp > 1: gpipe (all forwards, then all backwards), 1f1b, interleaved (1F1B over "
          "--pp-virtual chunks per rank) or zb (zero-bubble ZB-H1)");
    b.add("pp-layers", &C::pp_layers,
          "blocks of each pipeline stage, comma-separated (e.g. 3,3,2); empty = equal stages (--pp must divide "
          "--n-layer)");
    b.add("pp-virtual", &C::pp_virtual, "model chunks per rank under --pp-schedule interleaved");
    b.add("sequence-parallel", &C::sequence_parallel,
          "LayerNorms, dropouts, residual adds and biases run on 1/tp of each micro-batch's tokens per rank (a "
          "contiguous range; one sequence splits by position) instead of all (Megatron's sequence parallelism; "
          "--tp must divide --block-size; no effect at --tp 1)");
    b.add("tp-overlap", &C::tp_overlap,
          "with --sequence-parallel: split the all-gather before and the reduce-scatter after the tensor-parallel "
          "GEMMs into chunks that move while other chunks' GEMMs run (false: one collective, then the GEMM; over the "
          "copy engines of --collectives peer or auto: the other ranks' blocks move while this rank's own is "
          "multiplied)");
    b.add("collectives", &C::collectives,
          "all-reduce, reduce-scatter and all-gather of every group: native (NCCL on GPU, MPI on CPU), ring (ours, "
          "from send/recv), hierarchical (ours, inside each node then across nodes), peer (all-reduce over GPU peer "
          "memory: one-shot to 256 KB, two-shot to 64 MB, NCCL above) or auto (all-reduce: push, one-shot, two-shot, "
          "ring or NCCL by size from a table timed at start); peer and auto also move reduce-scatters and all-gathers "
          "with the copy engines (no SM taken from the GEMMs: the fastest choice for --sequence-parallel; blocks "
          "above 16 MB, such as --zero 3's, in 16 MB pieces); peer and auto are native where GPUs share no peer "
          "memory");
    b.alias("allreduce");
    b.add("allow-cross-node-tp", &C::allow_cross_node_tp,
          "run a tp group that spans nodes (a warning instead of an error; its all-reduces then cross the network)");
    b.add("ranks-per-node", &C::ranks_per_node,
          "count every N consecutive ranks as one node for the grid and --collectives hierarchical, instead of the "
          "nodes MPI reports (0), to try a multi-node layout on one machine");
    b.add("bucket-mb", &C::bucket_mb, "DDP gradient bucket size in MB (--zero 2 and 3: one bucket per block)");
    b.add("zero", &C::zero,
          "ZeRO stage over the data-parallel ranks: 0 (replicated, all-reduce), 1 (AdamW's m, v and f32 masters "
          "sharded: reduce-scatter, update the shard, all-gather), 2 (also gradients: each block's reduce-scattered "
          "from a pooled staging buffer into the gradient shard every micro-batch), 3 (also parameters, FSDP: each "
          "block all-gathered just before its forward and backward, the next one prefetched)");
    b.add("max-seconds", &C::max_seconds, "stop after this much training time, with a final eval (0 = no limit)");
    b.add("fit-schedule", &C::fit_schedule,
          "with --max-seconds: time the first steps, then set --max-iters, --warmup-iters and "
          "--lr-decay-iters so the schedule ends when the time does");
    b.add("cuda-graph", &C::cuda_graph, "capture the step as a CUDA graph when shapes are static");
    b.add("attention", &C::attention,
          "attention kernel: ours, cudnn (cuDNN's fused attention; bf16 or fp16 on a GPU) or auto (cudnn where "
          "this build and GPU have it, --dtype is bf16 or fp16 and the head size a multiple of 8 up to 128, except "
          "dropout under --tp; else ours)");
    b.add("recompute", &C::recompute,
          "activation recomputation: none, attention (each block's attention core is rerun in backward instead of "
          "kept: Megatron's selective recompute) or block (each block keeps only its input and is rerun in "
          "backward); the same losses and gradients, less memory, more compute");
    b.add("comm-timeout", &C::comm_timeout,
          "seconds a step or collective may wait before the rank aborts its communicator and exits (0 = off)");
    b.add("heartbeat-timeout", &C::heartbeat_timeout,
          "seconds without a heartbeat after which a peer rank counts as frozen or gone (0 = off)");
    b.add("skip-nonfinite", &C::skip_nonfinite,
          "updates with a non-finite loss or gradient norm that may be dropped before the run stops");
    b.group("observe");
    b.add("layer-stats", &C::layer_stats,
          "every N steps, per-layer statistics into metrics.jsonl: gradient and weight norms, update/weight "
          "ratio, bf16/fp16 gradient underflow per tensor; residual, attention and MLP output RMS, attention "
          "entropy per head, saturated GELU inputs per block (0 = off)");
    b.add("trace", &C::trace,
          "write a Chrome trace (Perfetto) of the --trace-steps to this file: every op on the compute stream and "
          "every collective on its communicator's stream, per rank, and print each rank's compute, communication, "
          "exposed communication and idle time per step (the CUDA graph is off: the traced steps run eagerly)");
    b.add("trace-steps", &C::trace_steps, "the steps --trace records, FIRST:LAST (1-based, inclusive)");
    b.add("op-times", &C::op_times,
          "print a table of the ops' device time per step at the end, per op and shape, with their TFLOP/s or "
          "GB/s, over every step after the first two (the CUDA graph is off: the steps run eagerly)");
    b.add("pp-timeline", &C::pp_timeline,
          "with --pp: write each rank's pipeline passes of the last step (start and end on the device) to "
          "DIR/timeline_rank<R>.json, for scripts/plot_pp_timeline.py (the CUDA graph is off)");
    b.group("state");
    b.add("resume", &C::resume, "continue from the newest complete checkpoint in --out");
    b.add("ckpt-interval", &C::ckpt_interval,
          "checkpoint every N steps (-1 = at every evaluation, 0 = only at the end); SIGTERM, SIGINT or SIGUSR1 "
          "also save, then stop with exit status 75");
    b.add("keep", &C::keep, "checkpoints to keep in --out (0 = all)");
    b.add("no-checkpoint", &C::no_checkpoint,
          "write no checkpoint, not even at the end or on a stopping signal (benchmarks of models whose "
          "checkpoints take minutes and tens of GB)");
    b.add("overwrite", &C::overwrite,
          "start over in an --out that holds another run, deleting its checkpoints and metrics (without it, "
          "such an --out is refused unless --resume)");
    b.add("init-from", &C::init_from,
          "start a new run (fresh optimizer, step 0) from these weights: a nanodist checkpoint (file or run "
          "directory) or a Hugging Face GPT-2 directory (config.json + model.safetensors); with --resume, a "
          "checkpoint in --out wins");
    b.add("async-save", &C::async_save,
          "write checkpoints in a background thread while training goes on (on a GPU from a pinned host "
          "snapshot, on the CPU from the live buffers, copied on write): true, false or auto (true on a GPU)");
    return b.bindings();
  }();
  return bindings;
}

}  // namespace

std::vector<ConfigField> train_config_fields(const TrainConfig& config) {
  std::vector<ConfigField> out;
  for (const Binding& b : train_bindings()) {
    out.push_back(b.field);
    out.back().text = b.text(config);
  }
  return out;
}

void set_train_config_field(TrainConfig& config, const std::string& name, const std::string& text,
                            const std::string& origin) {
  for (const Binding& b : train_bindings()) {
    if (b.field.name != name) continue;
    b.apply(config, text, origin);
    return;
  }
  ND_FAIL("TrainConfig has no field '" << name << "'");
}

void resolve_train_config(TrainConfig& c) {
  if (c.lr_decay_iters < 0) c.lr_decay_iters = c.max_iters;
}

void validate_train_config(const TrainConfig& c, int world_size) {
  ND_CHECK_INPUT(!c.data_dir.empty(), "--data DIR is required (a directory made by nanodist prepare)");
  ND_CHECK_INPUT(!c.out_dir.empty(), "--out DIR is required");
  // The model's own rules, named as flags; the vocabulary is checked when the data is opened.
  model_config_for(c, /*vocab_size=*/1).validate(nn::GPTConfig::FieldNames::Flags);
  ND_CHECK_INPUT(c.vocab_size >= 0, "--vocab-size must be >= 0 (0 = from the data), got " << c.vocab_size);
  ND_CHECK_INPUT(c.batch_size >= 1, "--batch-size must be >= 1, got " << c.batch_size);
  ND_CHECK_INPUT(c.grad_accum >= 1, "--grad-accum must be >= 1, got " << c.grad_accum);
  ND_CHECK_INPUT(c.max_iters >= 0, "--max-iters must be >= 0, got " << c.max_iters);
  ND_CHECK_INPUT(c.lr >= 0.0 && c.min_lr >= 0.0, "--lr and --min-lr must be >= 0, got " << c.lr << " and " << c.min_lr);
  ND_CHECK_INPUT(c.warmup_iters >= 0, "--warmup-iters must be >= 0, got " << c.warmup_iters);
  ND_CHECK_INPUT(c.lr_decay_iters >= -1, "--lr-decay-iters must be >= 0 (-1 = --max-iters), got " << c.lr_decay_iters);
  ND_CHECK_INPUT(c.weight_decay >= 0.0, "--weight-decay must be >= 0, got " << c.weight_decay);
  ND_CHECK_INPUT(c.beta1 >= 0.0 && c.beta1 < 1.0, "--beta1 must be in [0, 1), got " << c.beta1);
  ND_CHECK_INPUT(c.beta2 >= 0.0 && c.beta2 < 1.0, "--beta2 must be in [0, 1), got " << c.beta2);
  ND_CHECK_INPUT(c.grad_clip >= 0.0, "--grad-clip must be >= 0 (0 = no clipping), got " << c.grad_clip);
  ND_CHECK_INPUT(c.eval_interval >= 0, "--eval-interval must be >= 0, got " << c.eval_interval);
  ND_CHECK_INPUT(c.eval_iters >= 1, "--eval-iters must be >= 1, got " << c.eval_iters);
  ND_CHECK_INPUT(c.log_interval >= 1, "--log-interval must be >= 1, got " << c.log_interval);
  Device device = parse_device(c.device);
  DType dtype = parse_dtype(c.dtype);
  ND_CHECK_INPUT(dtype == DType::F32 || dtype == DType::BF16 || dtype == DType::F16,
                 "--dtype must be f32, bf16 or fp16, got " << c.dtype);
  ND_CHECK_INPUT(dtype != DType::BF16 || device.is_cuda(), "--dtype bf16 needs --device cuda");
  precision_policy(c);  // checks --grad-dtype, --master-weights, --loss-scale and --fp8 against --dtype
  ND_CHECK_INPUT(!c.fp8 || device.is_cuda(), "--fp8 needs --device cuda");
  ND_CHECK_INPUT(c.fp8_amax_history >= 1, "--fp8-amax-history must be >= 1, got " << c.fp8_amax_history);
  ND_CHECK_INPUT(!c.fp8 || c.tp == 1, "--fp8 runs at --tp 1 only for now, got --tp " << c.tp);
  ND_CHECK_INPUT(!c.fp8 || (static_cast<int64_t>(c.batch_size) * c.block_size % 16 == 0 && c.n_embd % 16 == 0),
                 "--fp8: batch-size x block-size and n-embd must be multiples of 16 (FP8 GEMM alignment), got "
                     << c.batch_size << " x " << c.block_size << " and " << c.n_embd);
  ND_CHECK_INPUT(!device.is_cuda() || cuda_available(),
           "--device " << c.device << " but this build or machine has no CUDA GPU");
  ND_CHECK_INPUT(c.collectives == "native" || c.collectives == "ring" || c.collectives == "hierarchical" ||
                     c.collectives == "peer" || c.collectives == "auto",
                 "--collectives (or --allreduce) must be native, ring, hierarchical, peer or auto, got '"
                     << c.collectives << "'");
  ND_CHECK_INPUT(c.bucket_mb > 0.0, "--bucket-mb must be > 0, got " << c.bucket_mb);
  ND_CHECK_INPUT(c.zero >= 0 && c.zero <= 3, "--zero must be 0, 1, 2 or 3, got " << c.zero);
  ND_CHECK_INPUT(c.zero == 0 || !c.sequence_parallel || c.tp == 1,
                 "--zero " << c.zero << " with --sequence-parallel is not available yet");
  // ZeRO 2 keeps no full-size gradients: what reads them (the pipeline's tied-embedding sum, the
  // per-layer gradient statistics) waits for a port to the gradient shard.
  ND_CHECK_INPUT(c.zero < 2 || c.pp == 1, "--zero " << c.zero << " with --pp > 1 is not available yet");
  ND_CHECK_INPUT(c.zero < 2 || c.layer_stats == 0, "--zero " << c.zero << " with --layer-stats is not available yet");
  ND_CHECK_INPUT(c.zero < 3 || !c.fp8, "--zero 3 with --fp8 is not available yet");
  ND_CHECK_INPUT(c.zero < 3 || c.init_from.empty(), "--zero 3 with --init-from is not available yet");
  ND_CHECK_INPUT(c.max_seconds >= 0.0, "--max-seconds must be >= 0 (0 = no limit), got " << c.max_seconds);
  ND_CHECK_INPUT(!c.fit_schedule || c.max_seconds > 0, "--fit-schedule needs a time budget: --max-seconds > 0");
  ND_CHECK_INPUT(c.comm_timeout >= 0.0, "--comm-timeout must be >= 0 (0 = off), got " << c.comm_timeout);
  ND_CHECK_INPUT(c.heartbeat_timeout >= 0.0, "--heartbeat-timeout must be >= 0 (0 = off), got " << c.heartbeat_timeout);
  ND_CHECK_INPUT(c.layer_stats >= 0, "--layer-stats must be >= 0, got " << c.layer_stats);
  if (!c.trace.empty()) parse_trace_steps(c.trace_steps);
  ND_CHECK_INPUT(c.ranks_per_node >= 0, "--ranks-per-node must be >= 0 (0 = the nodes MPI reports), got "
                                            << c.ranks_per_node);
  ND_CHECK_INPUT(c.skip_nonfinite >= 0, "--skip-nonfinite must be >= 0, got " << c.skip_nonfinite);
  ND_CHECK_INPUT(c.ckpt_interval >= -1,
                 "--ckpt-interval must be >= -1 (-1 = at every evaluation, 0 = only at the end), got " << c.ckpt_interval);
  ND_CHECK_INPUT(c.async_save == "auto" || c.async_save == "true" || c.async_save == "false",
                 "--async-save must be true, false or auto, got '" << c.async_save << "'");
  ND_CHECK_INPUT(c.keep >= 0, "--keep must be >= 0 (0 = keep all), got " << c.keep);
  ND_CHECK_INPUT(world_size >= 1, "world size must be >= 1, got " << world_size);
  ND_CHECK_INPUT(c.tp >= 1, "--tp must be >= 1, got " << c.tp);
  ND_CHECK_INPUT(c.pp >= 1, "--pp must be >= 1, got " << c.pp);
  ND_CHECK_INPUT(c.pp_virtual >= 1, "--pp-virtual must be >= 1, got " << c.pp_virtual);
  if (c.pp > 1) validate_pipeline_config(c);
  ND_CHECK_INPUT(!c.sequence_parallel || c.block_size % c.tp == 0,
                 "--sequence-parallel: --block-size " << c.block_size << " is not divisible by --tp " << c.tp);
  ND_CHECK_INPUT(world_size % c.tp == 0, "world size " << world_size << " is not divisible by --tp " << c.tp);
  ND_CHECK_INPUT(world_size % (c.tp * c.pp) == 0,
                 "world size " << world_size << " is not divisible by --tp " << c.tp << " x --pp " << c.pp);
  ND_CHECK_INPUT(c.n_head % c.tp == 0, "--n-head " << c.n_head << " is not divisible by --tp " << c.tp);
  ND_CHECK_INPUT(c.n_embd % c.tp == 0, "--n-embd " << c.n_embd << " is not divisible by --tp " << c.tp);
}

}  // namespace nd::train
