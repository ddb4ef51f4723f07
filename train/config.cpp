// The train flag table is one list of (flag, TrainConfig member) bindings, so a flag's name, its
// default (read from a default-constructed TrainConfig) and its field never drift apart. The
// member's type decides how its text is parsed (once, here) and written back (config_codec.h).
#include "train/config.h"

#include <functional>
#include <vector>

#include "tensor/error.h"
#include "train/config_codec.h"

namespace nd::train {
namespace {

using config_codec::Codec;

// `apply` sets the field from (text, origin); `text` reads it back.
struct Binding {
  ConfigField field;
  std::function<void(TrainConfig&, const std::string&, const std::string&)> apply;
  std::function<std::string(const TrainConfig&)> text;
};

class BindingList {
 public:
  explicit BindingList(std::string group) : group_(std::move(group)) {}
  void group(std::string g) { group_ = std::move(g); }

  // The flag `name` sets config.*section.*field.
  template <typename S, typename T>
  void add(const char* name, S TrainConfig::*section, T S::*field, const char* help) {
    ConfigField f{name, Codec<T>::type, Codec<T>::text(defaults_.*section.*field), help, group_, {}};
    bindings_.push_back({f,
                         [section, field](TrainConfig& c, const std::string& text, const std::string& origin) {
                           c.*section.*field = Codec<T>::parse(text, origin);
                         },
                         [section, field](const TrainConfig& c) { return Codec<T>::text(c.*section.*field); }});
  }
  // Another name for the flag added last (an old name kept working).
  void alias(const char* name) { bindings_.back().field.aliases.push_back(name); }
  const std::vector<Binding>& bindings() const { return bindings_; }

 private:
  TrainConfig defaults_;
  std::string group_;
  std::vector<Binding> bindings_;
};

const std::vector<Binding>& train_bindings() {
  static const std::vector<Binding> bindings = [] {
    BindingList b("paths");
    using C = TrainConfig;
    b.add("data", &C::data, &C::Data::dir,
          "directory with train.bin, val.bin, tokenizer.txt, or llm.c shards (dir or glob), or nanoGPT's "
          "train.bin/val.bin (required)");
    b.add("out", &C::checkpoint, &C::Checkpoint::out_dir, "directory for checkpoints and metrics.jsonl (required)");
    b.group("model");
    b.add("n-layer", &C::model, &C::Model::n_layer, "transformer blocks");
    b.add("n-head", &C::model, &C::Model::n_head, "attention heads (must divide n-embd)");
    b.add("n-embd", &C::model, &C::Model::n_embd, "embedding width");
    b.add("block-size", &C::model, &C::Model::block_size, "context length in tokens");
    b.add("dropout", &C::model, &C::Model::dropout, "dropout probability");
    b.add("bias", &C::model, &C::Model::bias, "biases in linear layers and LayerNorm");
    b.add("no-layernorm", &C::model, &C::Model::no_layernorm, "ablation: remove every LayerNorm");
    b.add("no-residual", &C::model, &C::Model::no_residual, "ablation: remove the residual connections");
    b.add("vocab-size", &C::model, &C::Model::vocab_size,
          "vocabulary size for data that records none (nanoGPT .bin; llm.c: 50257 GPT-2, 128256 Llama 3); 0 = from "
          "the data");
    b.group("batch");
    b.add("batch-size", &C::data, &C::Data::batch_size, "sequences per rank per micro-step");
    b.add("grad-accum", &C::data, &C::Data::grad_accum,
          "micro-steps per rank per optimizer step (global batch = batch-size x grad-accum x data-parallel size, which is ranks / (tp x pp))");
    b.group("schedule");
    b.add("max-iters", &C::schedule, &C::Schedule::max_iters, "optimizer steps");
    b.add("lr", &C::optim, &C::Optim::lr, "peak learning rate");
    b.add("min-lr", &C::optim, &C::Optim::min_lr, "learning rate at the end of the decay");
    b.add("warmup-iters", &C::schedule, &C::Schedule::warmup_iters, "linear warmup steps (0 = no warmup)");
    b.add("lr-schedule", &C::schedule, &C::Schedule::lr_schedule,
          "the decay after warmup: cosine (nanoGPT's), linear, wsd (warmup-stable-decay: the peak held, then a "
          "linear decay over the last --decay-frac of the span) or constant (the peak to the end)");
    b.add("decay-frac", &C::schedule, &C::Schedule::decay_frac,
          "with --lr-schedule wsd: the share of the steps from warmup to --lr-decay-iters spent decaying");
    b.add("lr-decay-iters", &C::schedule, &C::Schedule::lr_decay_iters, "step where the decay reaches min-lr (-1 = --max-iters)");
    b.add("weight-decay", &C::optim, &C::Optim::weight_decay, "AdamW decoupled weight decay (matrices and embeddings only)");
    b.add("beta1", &C::optim, &C::Optim::beta1, "AdamW beta1");
    b.add("beta2", &C::optim, &C::Optim::beta2, "AdamW beta2");
    b.add("grad-clip", &C::optim, &C::Optim::grad_clip, "clip the global gradient norm to this (0 = no clipping)");
    b.group("eval/log");
    b.add("eval-interval", &C::schedule, &C::Schedule::eval_interval, "evaluate train and val loss every N steps (0 = only at the end)");
    b.add("eval-iters", &C::schedule, &C::Schedule::eval_iters, "batches per split in an evaluation");
    b.add("log-interval", &C::observe, &C::Observe::log_interval, "print a step line every N steps");
    b.group("system");
    b.add("device", &C::parallel, &C::Parallel::device, "cpu, cuda or auto (cuda where this machine has a GPU, else cpu)");
    b.add("dtype", &C::precision, &C::Precision::dtype,
          "f32, bf16 or fp16 (bf16 needs cuda; fp16 on the cpu emulates the GPU's f16 kernels, slowly, for tests; "
          "f32 master weights and optimizer state either way)");
    b.add("grad-dtype", &C::precision, &C::Precision::grad_dtype,
          "f32, bf16 or f16: gradients accumulated over micro-batches and reduced in this dtype (default: --dtype, "
          "but f32 under fp16, whose tiny gradients the unscale would flush to zero; f32 under bf16 is Megatron's "
          "main_grad)");
    b.add("loss-scale", &C::precision, &C::Precision::loss_scale,
          "scale of the loss before backward, gradients divided by it before clipping, overflowing steps skipped: "
          "dynamic (65536, x2 after 2000 finite steps, x0.5 on overflow), "
          "a fixed number (1 = off), or auto (dynamic under fp16, else off)");
    b.add("master-weights", &C::precision, &C::Precision::master_weights,
          "keep f32 master weights beside bf16 or fp16 parameters (false: the update rounds into the 16-bit "
          "weights in place, an ablation)");
    b.add("fp8", &C::precision, &C::Precision::fp8,
          "run the linears' GEMMs in FP8 (E4M3 forward, E5M2 gradients, delayed scaling over an amax history of "
          "--fp8-amax-history steps; needs --dtype bf16 on a GPU with FP8 tensor cores, batch-size x block-size a "
          "multiple of 16 and n-embd of 16 x --tp; at --tp > 1 each rank quantises its shard with the scale agreed over "
          "the group); attention, LayerNorm and softmax stay bf16, the loss reads bf16 logits and is f32");
    b.add("fp8-layers", &C::precision, &C::Precision::fp8_layers, "with --fp8: all, or a comma list of attn, mlp, head");
    b.add("fp8-amax-history", &C::precision, &C::Precision::fp8_amax_history,
          "with --fp8: the steps of amax history each quantised tensor's scale is taken from (the max over them); "
          "a resumed run whose checkpoint holds longer histories keeps their newest amaxes");
    b.add("seed", &C::debug, &C::Debug::seed, "seed of parameter init, dropout and batch sampling");
    b.add("tp", &C::parallel, &C::Parallel::tp, "tensor-parallel size");
    b.add("pp", &C::parallel, &C::Parallel::pp,
          "pipeline-parallel size: stages of contiguous blocks, one per rank of a pipeline group (data-parallel "
          "size = ranks / (tp x pp)); the micro-batches of a step are its --grad-accum");
    b.add("pp-schedule", &C::parallel, &C::Parallel::pp_schedule,
          "pipeline schedule at --pp > 1: gpipe (all forwards, then all backwards), 1f1b, interleaved (1F1B over "
          "--pp-virtual chunks per rank) or zb (zero-bubble ZB-H1; under --zero 2 and 3 each block then keeps a "
          "gradient staging buffer of its own)");
    b.add("pp-layers", &C::parallel, &C::Parallel::pp_layers,
          "blocks of each pipeline stage, comma-separated (e.g. 3,3,2); empty = equal stages (--pp must divide "
          "--n-layer)");
    b.add("pp-virtual", &C::parallel, &C::Parallel::pp_virtual, "model chunks per rank under --pp-schedule interleaved");
    b.add("sequence-parallel", &C::parallel, &C::Parallel::sequence_parallel,
          "LayerNorms, dropouts, residual adds and biases run on 1/tp of each micro-batch's tokens per rank (a "
          "contiguous range; one sequence splits by position) instead of all (Megatron's sequence parallelism; "
          "--tp must divide --block-size; no effect at --tp 1)");
    b.add("tp-overlap", &C::parallel, &C::Parallel::tp_overlap,
          "with --sequence-parallel: split the all-gather before and the reduce-scatter after the tensor-parallel "
          "GEMMs into chunks that move while other chunks' GEMMs run (false: one collective, then the GEMM; over the "
          "copy engines of --collectives peer or auto: the other ranks' blocks move while this rank's own is "
          "multiplied)");
    b.add("collectives", &C::parallel, &C::Parallel::collectives,
          "all-reduce, reduce-scatter and all-gather of every group: native (NCCL on GPU, MPI on CPU), ring (ours, "
          "from send/recv), hierarchical (ours, inside each node then across nodes), peer (all-reduce over GPU peer "
          "memory: one-shot to 256 KB, two-shot to 64 MB, NCCL above) or auto (all-reduce: push, one-shot, two-shot, "
          "ring or NCCL by size from a table timed at start); peer and auto also move reduce-scatters and all-gathers "
          "with the copy engines (no SM taken from the GEMMs: the fastest choice for --sequence-parallel; blocks "
          "above 16 MB, such as --zero 3's, in 16 MB pieces); peer and auto are native where GPUs share no peer "
          "memory");
    b.alias("allreduce");
    b.add("allow-cross-node-tp", &C::parallel, &C::Parallel::allow_cross_node_tp,
          "run a tp group that spans nodes (a warning instead of an error; its all-reduces then cross the network)");
    b.add("ranks-per-node", &C::parallel, &C::Parallel::ranks_per_node,
          "count every N consecutive ranks as one node for the grid and --collectives hierarchical, instead of the "
          "nodes MPI reports (0), to try a multi-node layout on one machine");
    b.add("bucket-mb", &C::parallel, &C::Parallel::bucket_mb, "DDP gradient bucket size in MB (--zero 2 and 3: one bucket per block)");
    b.add("zero", &C::parallel, &C::Parallel::zero,
          "ZeRO stage over the data-parallel ranks: 0 (replicated, all-reduce), 1 (AdamW's m, v and f32 masters "
          "sharded: reduce-scatter, update the shard, all-gather), 2 (also gradients: each block's reduce-scattered "
          "from a pooled staging buffer into the gradient shard every micro-batch), 3 (also parameters, FSDP: each "
          "block all-gathered just before its forward and backward, the next one prefetched)");
    b.add("max-seconds", &C::schedule, &C::Schedule::max_seconds, "stop after this much training time, with a final eval (0 = no limit)");
    b.add("fit-schedule", &C::schedule, &C::Schedule::fit_schedule,
          "with --max-seconds: time the first steps, then set --max-iters, --warmup-iters and "
          "--lr-decay-iters so the schedule ends when the time does");
    b.add("cuda-graph", &C::debug, &C::Debug::cuda_graph, "capture the step as a CUDA graph when shapes are static");
    b.add("attention", &C::model, &C::Model::attention,
          "attention kernel: ours, cudnn (cuDNN's fused attention; bf16 or fp16 on a GPU) or auto (cudnn where "
          "this build and GPU have it, --dtype is bf16 or fp16 and the head size a multiple of 8 up to 128, except "
          "dropout under --tp; else ours)");
    b.add("recompute", &C::model, &C::Model::recompute,
          "activation recomputation: none, attention (each block's attention core is rerun in backward instead of "
          "kept: Megatron's selective recompute) or block (each block keeps only its input and is rerun in "
          "backward); the same losses and gradients, less memory, more compute");
    b.add("comm-timeout", &C::parallel, &C::Parallel::comm_timeout,
          "seconds a step or collective may wait before the rank aborts its communicator and exits (0 = off)");
    b.add("heartbeat-timeout", &C::parallel, &C::Parallel::heartbeat_timeout,
          "seconds without a heartbeat after which a peer rank counts as frozen or gone (0 = off)");
    b.add("skip-nonfinite", &C::debug, &C::Debug::skip_nonfinite,
          "updates with a non-finite loss or gradient norm that may be dropped before the run stops");
    b.group("observe");
    b.add("layer-stats", &C::observe, &C::Observe::layer_stats,
          "every N steps, per-layer statistics into metrics.jsonl: gradient and weight norms, update/weight "
          "ratio, bf16/fp16 gradient underflow per tensor; residual, attention and MLP output RMS, attention "
          "entropy per head, saturated GELU inputs per block (0 = off)");
    b.add("trace", &C::observe, &C::Observe::trace,
          "write a Chrome trace (Perfetto) of the --trace-steps to this file: every op on the compute stream and "
          "every collective on its communicator's stream, per rank, and print each rank's compute, communication, "
          "exposed communication and idle time per step (the CUDA graph is off: the traced steps run eagerly)");
    b.add("trace-steps", &C::observe, &C::Observe::trace_steps, "the steps --trace records, FIRST:LAST (1-based, inclusive)");
    b.add("op-times", &C::observe, &C::Observe::op_times,
          "print a table of the ops' device time per step at the end, per op and shape, with their TFLOP/s or "
          "GB/s, over every step after the first two (the CUDA graph is off: the steps run eagerly)");
    b.add("pp-timeline", &C::observe, &C::Observe::pp_timeline,
          "with --pp: write each rank's pipeline passes of the last step (start and end on the device) to "
          "DIR/timeline_rank<R>.json, for scripts/plot_pp_timeline.py (the CUDA graph is off)");
    b.group("state");
    b.add("resume", &C::checkpoint, &C::Checkpoint::resume, "continue from the newest complete checkpoint in --out; flags not given (here or in --config) take the run's values from OUT/run.conf");
    b.add("ckpt-interval", &C::checkpoint, &C::Checkpoint::interval,
          "checkpoint every N steps (-1 = at every evaluation, 0 = only at the end); SIGTERM, SIGINT or SIGUSR1 "
          "also save, then stop with exit status 75");
    b.add("keep", &C::checkpoint, &C::Checkpoint::keep, "checkpoints to keep in --out (0 = all)");
    b.add("no-checkpoint", &C::checkpoint, &C::Checkpoint::disabled,
          "write no checkpoint, not even at the end or on a stopping signal (benchmarks of models whose "
          "checkpoints take minutes and tens of GB)");
    b.add("overwrite", &C::checkpoint, &C::Checkpoint::overwrite,
          "start over in an --out that holds another run, deleting its checkpoints and metrics (without it, "
          "such an --out is refused unless --resume)");
    b.add("init-from", &C::checkpoint, &C::Checkpoint::init_from,
          "start a new run (fresh optimizer, step 0) from these weights: a nanodist checkpoint (file or run "
          "directory) or a Hugging Face GPT-2 directory (config.json + model.safetensors); with --resume, a "
          "checkpoint in --out wins");
    b.add("async-save", &C::checkpoint, &C::Checkpoint::async_save,
          "write checkpoints in a background thread while training goes on, from a host snapshot taken at "
          "the save (pinned on a GPU): true, false or auto (true on a GPU)");
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

}  // namespace nd::train
