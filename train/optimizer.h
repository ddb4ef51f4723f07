// AdamW over a model's flat buffers (dist/parallel/flat_params.h), with nanoGPT's grouping: tensors of two
// or more dimensions (matmul weights, embeddings) get weight decay, the rest (biases, LayerNorm
// gains) none. The f32 moments m, v (and f32 master weights beside bf16 parameters) live in flat
// buffers of the same layout, each parameter's state a view; the norm and the update run over
// flat runs (contiguous ranges with one weight-decay and sharding class), not tensor by tensor,
// so a ZeRO shard, a range cutting across tensors, is the same kind of work. Clips by global norm.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/variable.h"
#include "dist/comm/comm.h"
#include "dist/parallel/flat_params.h"

namespace nd::train {

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.99;
  double eps = 1e-8;
  double weight_decay = 0.1;
  // f32 master weights beside lower-precision parameters; false updates them in place (each step
  // rounded to the parameter's dtype, so updates below its resolution are lost: an ablation).
  bool master_weights = true;
  // Whether each parameter, by name, takes weight decay: the model's nn::ParamInfo::decay. Empty:
  // those of two or more dimensions (in_decay_group), for parameters without a model.
  std::map<std::string, bool> decay;
};

struct ParamState {
  std::string name;
  Variable param;
  size_t entry = 0;  // its index in the flat layout (dist::FlatParams::entries())
  Tensor m;  // same shape and device as the parameter, f32, zeros at start (a view of the flat m)
  Tensor v;
  // f32 master weights when the parameter itself is lower precision (bf16 on the GPU): the
  // update runs on the master and writes the rounded value back to the parameter.
  Tensor master;
  bool decay = false;  // in the weight-decay group
  // Split over the tensor-parallel group (each rank holds a different shard): its squares are
  // summed over the group for the global norm; a replicated one counts once.
  bool sharded = false;
  // Counted in the global norm here (false: another rank of the group counts the same gradient,
  // as the first pipeline stage counts the tied embedding that the last stage holds a copy of).
  bool in_norm = true;
};

struct DeviceOptimizerState;  // per-device launch data, built on the first GPU step

// nanoGPT's rule for tensors without a model's ParamInfo: dim >= 2 decays.
bool in_decay_group(const Tensor& param);

// The flat optimizer state: m, v and (for bf16 parameters) the f32 masters, numel() each, or under
// ZeRO the rank's shard of them; `grads` is what the update reads (the flat gradients, or the
// engine's f32 gradient shard), and `shard_group` (ZeRO) the group whose shards sum to the norm.
struct FlatOptimizerState {
  Tensor m, v, master;
  Tensor grads;
  Tensor params;  // what the update writes: the flat parameters, or under ZeRO 3 the parameter shard
  dist::Comm* shard_group = nullptr;
};

// A contiguous range [begin, begin + length) of the flat buffers whose tensors all have a gradient
// this step and share the weight-decay group and the tensor-parallel sharding. `local`: where the
// range starts in m, v and master of FlatOptimizerState, `grad` where in its grads (both begin
// itself unless sharded; ZeRO 1 reduces in place, so its grads stay at begin).
struct FlatRun {
  int64_t begin = 0, length = 0;
  bool decay = false;
  bool sharded = false;
  int64_t local = 0;
  int64_t grad = 0;
  bool in_norm = true;  // false: a copy another rank of the model-parallel group counts
  int64_t param = 0;    // where in FlatOptimizerState::params (begin, or local under ZeRO 3)
};

// ZeRO's part of the optimizer on this rank (dist::DataParallelEngine's owned(), shard_numel(),
// shard_grads() and its group).
struct AdamWShard {
  std::vector<dist::ShardSlice> owned;
  int64_t numel = 0;
  Tensor grads;  // f32, numel (ZeRO 2); undefined: the flat gradients, reduced in place (ZeRO 1)
  dist::Comm* group = nullptr;
  // ZeRO 3: the owned parameters (numel, the parameters' dtype), which the update writes and the
  // masters start from; undefined: the flat parameters.
  Tensor params;
};

class AdamW {
 public:
  // Over `flat` (shared with the data-parallel engine, which must see the same object). With
  // `shard` (ZeRO): m, v and the masters hold only the owned slices (the masters copied from the
  // parameters), the update reads shard->grads (or the flat gradients' owned slices), writes only
  // the owned parameters, and the norm sums the shards' squares over shard->group; the
  // per-parameter views of ParamState (m, v, master) stay undefined (owned_of and load_owned reach
  // a tensor's pieces).
  AdamW(std::shared_ptr<dist::FlatParams> flat, AdamWOptions options, const AdamWShard* shard = nullptr);
  // Flattens `named_params` itself (gradients in the parameters' dtype): for one-rank uses.
  AdamW(const std::vector<std::pair<std::string, Variable>>& named_params, AdamWOptions options);

  // Global L2 norm of every gradient (parameters without a gradient count as zero). Under data
  // parallelism call it after the gradient all-reduce, so every rank sees the same norm.
  double grad_norm() const;

  // One update at learning rate `lr`: computes the global norm once, scales gradients by
  // min(1, grad_clip / (norm + 1e-6)) inside the update when grad_clip > 0, and returns the
  // norm before clipping (for logging). Parameters without a gradient are left alone. When the
  // norm is not finite (a NaN or inf gradient) nothing is updated on any device: parameters,
  // moments and the step count stay as they were.
  // Same as begin_step(lr); enqueue_update(grad_clip); return finish_step().
  double step(double lr, double grad_clip);

  // step() in three parts, so a training step can be captured into a CUDA graph: begin_step
  // counts the step and sets lr and the bias corrections (on the GPU: uploads them, before each
  // replay, outside the graph); enqueue_update runs the norm, clip and AdamW (on the GPU: queues
  // the kernels, no host sync); last_grad_norm reads the norm of the update that ran last.
  void begin_step(double lr);
  void enqueue_update(double grad_clip);
  double last_grad_norm() const;
  // last_grad_norm(), after which a step whose update was dropped (non-finite norm) is uncounted.
  double finish_step();

  // Tensor parallelism: `tp` (the group, outliving this optimizer) and the names of the sharded
  // parameters. The global norm then sums the sharded parameters' squares over the group and
  // the replicated ones once, so it equals the unsplit model's. nd::Error on an unknown name.
  // Under pipeline parallelism `tp` is the model-parallel group (tp x pp), every parameter counted
  // here is "sharded" and `not_in_norm` names the copies another rank of it counts.
  void set_tensor_parallel(dist::Comm* tp, const std::vector<std::string>& sharded_names,
                           const std::vector<std::string>& not_in_norm = {});

  bool sharded() const { return sharded_; }
  bool grads_in_shard() const { return grads_in_shard_; }    // ZeRO 2 and 3
  bool params_in_shard() const { return params_in_shard_; }  // ZeRO 3
  const std::vector<dist::ShardSlice>& owned() const { return owned_; }  // ZeRO: this rank's slices
  // ZeRO: the pieces of parameter `name` this rank owns: elements [begin, begin + length) of the
  // tensor (row-major, its local shape) at `local` in the shard buffers. Unsharded: the whole.
  std::vector<dist::ShardSlice> owned_of(const std::string& name) const;
  // Copies this rank's pieces of `name` out of `value` (the whole local tensor, any device and
  // float dtype) into the master (group 0; under ZeRO 3 also the parameter shard), m (1) or v (2):
  // what a load does under ZeRO.
  void load_owned(const std::string& name, int group, const Tensor& value);
  // Bytes of m, v and the masters on this rank.
  int64_t state_bytes() const;

  int64_t step_count() const { return step_count_; }
  void set_step_count(int64_t steps) { step_count_ = steps; }
  const AdamWOptions& options() const { return options_; }
  std::vector<ParamState>& states() { return states_; }
  const std::vector<ParamState>& states() const { return states_; }
  ParamState& state(const std::string& name);  // nd::Error on an unknown name
  dist::FlatParams& flat() { return *flat_; }
  FlatOptimizerState& flat_state() { return flat_state_; }
  const FlatOptimizerState& flat_state() const { return flat_state_; }
  // The runs of this step: the tensors with a gradient (dist::FlatParams::has_gradient), merged.
  std::vector<FlatRun> runs() const;

 private:
  bool on_gpu() const;

  AdamWOptions options_;
  std::shared_ptr<dist::FlatParams> flat_;
  FlatOptimizerState flat_state_;
  std::vector<ParamState> states_;  // registration order: the flat layout's entries reversed
  dist::Comm* tp_ = nullptr;  // nullptr: no tensor parallelism
  bool sharded_ = false;
  bool grads_in_shard_ = false;  // ZeRO 2: the update reads the engine's gradient shard
  bool params_in_shard_ = false;  // ZeRO 3: the update writes the engine's parameter shard
  std::vector<dist::ShardSlice> owned_;
  int64_t step_count_ = 0;
  double step_lr_ = 0.0;  // the lr of the step begun last (begin_step)
  double host_grad_norm_ = 0.0;  // the CPU update's norm (the GPU's stays on the device)
  std::shared_ptr<DeviceOptimizerState> device_state_;
};

// The factor gradients are multiplied by: 1 without clipping or when norm <= clip.
double clip_scale(double norm, double grad_clip);

}  // namespace nd::train
