// The statistics of layer_stats.h: where each sum lives in the buffer of doubles, what each rank
// adds, and how the sums become norms, ratios, RMS and shares once added over the ranks.
#include "train/layer_stats.h"

#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include "autograd/ops.h"
#include "kernels/layer_stats_slot.h"
#include "tensor/op_timer.h"
#include "train/layer_stats_device.h"
#include "train/metrics.h"

namespace nd::train {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Per tensor: three slots (gradient, weight before the step, update) of kStatsPerSlot sums.
constexpr int64_t kTensorSums = 3 * kStatsPerSlot;
// Per block: residual, attention output, MLP output, GELU input, then one entropy sum per head.
constexpr int64_t kResid = 0, kAttn = kStatsPerSlot, kMlp = 2 * kStatsPerSlot, kGelu = 3 * kStatsPerSlot,
                  kEntropy = 4 * kStatsPerSlot;
// Counts the host adds after the device sums: per block (activation values, GELU inputs, attention
// rows of each head), per tensor (gradient values).
constexpr int64_t kBlockCounts = 3;

double ratio(double num, double den) { return den > 0 ? num / den : kNaN; }

}  // namespace

struct LayerStats::Impl {
  nn::GPT& model;
  AdamW& optimizer;
  LayerStatsRanks ranks;
  std::vector<std::pair<std::string, Variable>> params;
  std::vector<size_t> entry_of;    // params[i]'s index in the flat layout
  std::vector<bool> counted;       // params[i]'s sums added on this rank (its pieces: AdamW::owned_of)
  std::vector<int> block_of;       // params[i]'s block, -1 outside the blocks
  int n_layer = 0, n_head = 0, tp_rank = 0, tp_size = 1;
  bool splits_tokens = false;
  int64_t block_base = 0, device_sums = 0;
  Tensor sums;                     // F64 (device_sums) on the model's device
  Tensor snapshot;                 // the weights before the step (weights()'s layout)
  std::unique_ptr<StatTensorList> param_list;
  std::vector<double> counts;      // host counts: n_layer * kBlockCounts, then one per tensor
  std::vector<double> values;      // per tensor: the values of its pieces on this rank

  Impl(nn::GPT& m, AdamW& o, const LayerStatsRanks& r) : model(m), optimizer(o), ranks(r) {
    params = model.named_parameters();
    const auto infos = model.named_param_infos();
    const dist::TensorParallel& tp = ranks.tp;
    tp_rank = tp.rank();
    tp_size = tp.size();
    splits_tokens = tp.splits_tokens();
    n_layer = model.config().n_layer;
    n_head = model.config().n_head;
    std::map<std::string, size_t> entry_index;
    const auto& entries = optimizer.flat().entries();
    for (size_t e = 0; e < entries.size(); ++e) entry_index[entries[e].name] = e;
    for (size_t i = 0; i < params.size(); ++i) {
      auto it = entry_index.find(params[i].first);
      ND_CHECK(it != entry_index.end(), "layer statistics: " << params[i].first << " is not in the flat buffers");
      entry_of.push_back(it->second);
      // Under ZeRO each data-parallel rank holds its own pieces of every tensor, reduced; else data-
      // parallel rank 0 counts the whole. A tensor replicated over tp counts on tp rank 0.
      counted.push_back((optimizer.sharded() || ranks.dp_rank == 0) &&
                        (infos.at(i).second.split.sharded() || tp_rank == 0));
      block_of.push_back(infos.at(i).second.block);
    }
    values.assign(params.size(), 0.0);
    block_base = static_cast<int64_t>(params.size()) * kTensorSums;
    device_sums = block_base + static_cast<int64_t>(n_layer) * (kEntropy + n_head);
  }

  // The weights the update writes: the f32 masters where they exist, else the parameters (under
  // ZeRO 3 the parameter shard).
  const Tensor& weights() const {
    const FlatOptimizerState& state = optimizer.flat_state();
    return state.master.defined() ? state.master : state.params;
  }

  // Per counted tensor and piece of it this rank holds: its gradient as the update reads it, its
  // weights before the step (the snapshot) and after.
  void build_param_list() {
    snapshot = Tensor::zeros({weights().numel()}, weights().dtype(), weights().device());
    const FlatOptimizerState& state = optimizer.flat_state();
    const bool weights_at_flat_offsets = !state.master.defined() && !optimizer.params_in_shard();
    std::vector<StatTensor> list;
    dist::FlatParams& flat = optimizer.flat();
    for (size_t i = 0; i < params.size(); ++i) {
      if (!counted[i]) continue;
      const dist::FlatEntry& e = flat.entries()[entry_of[i]];
      const int64_t base = static_cast<int64_t>(i) * kTensorSums;
      for (const dist::ShardSlice& piece : optimizer.owned_of(e.name)) {
        const int64_t flat_at = e.offset + piece.begin;
        const int64_t grad_at = optimizer.grads_in_shard() ? piece.local : flat_at;
        const int64_t weight_at = weights_at_flat_offsets ? flat_at : piece.local;
        Tensor old_w = snapshot.narrow(weight_at, piece.length);
        list.push_back({state.grads.narrow(grad_at, piece.length), Tensor(), base});
        list.push_back({old_w, Tensor(), base + kStatsPerSlot});
        list.push_back({weights().narrow(weight_at, piece.length), old_w, base + 2 * kStatsPerSlot});
        values[i] += static_cast<double>(piece.length);
      }
    }
    param_list = std::make_unique<StatTensorList>(std::move(list));
  }

  int64_t block_at(int layer) const { return block_base + static_cast<int64_t>(layer) * (kEntropy + n_head); }
  double& count(int layer, int k) { return counts[static_cast<size_t>(layer) * kBlockCounts + k]; }

};

LayerStats::LayerStats(nn::GPT& model, AdamW& optimizer, const LayerStatsRanks& ranks)
    : impl_(std::make_unique<Impl>(model, optimizer, ranks)) {}

LayerStats::~LayerStats() = default;

void LayerStats::before_step(const Tensor& inputs) {
  Impl& s = *impl_;
  ND_CHECK(inputs.ndim() == 2 && inputs.dtype() == DType::I32 && inputs.device().is_cpu(),
           "layer statistics: the probe takes (B, T) i32 token ids on the CPU, got " << inputs.str());
  if (!s.param_list) s.build_param_list();
  s.sums = Tensor::zeros({s.device_sums}, DType::F64, s.model.device());
  s.counts.assign(static_cast<size_t>(s.n_layer) * kBlockCounts + s.params.size(), 0.0);
  s.snapshot.copy_from(s.weights());

  int64_t rows = std::min<int64_t>(inputs.size(0), kProbeRows);
  if (s.splits_tokens) rows = std::min<int64_t>(inputs.size(0), (rows + s.tp_size - 1) / s.tp_size * s.tp_size);
  const int64_t T = inputs.size(1);
  const int32_t* ids = inputs.data<int32_t>();
  Tensor idx = Tensor::from_vector(std::vector<int32_t>(ids, ids + rows * T), Shape{rows, T}).to(s.model.device());

  NoGradGuard no_grad;
  const bool was_training = s.model.training();
  op_timer::pause(true);
  s.model.set_training(false);
  s.model.set_block_observer(this);
  try {
    Generator unused(0, 0);  // dropout is off: nothing is drawn
    if (s.model.is_first_stage()) s.model.blocks(s.model.embed(idx, unused), unused);
  } catch (...) {
    s.model.set_block_observer(nullptr);
    s.model.set_training(was_training);
    op_timer::pause(false);
    throw;
  }
  s.model.set_block_observer(nullptr);
  s.model.set_training(was_training);
  op_timer::pause(false);
}

void LayerStats::on_block(const nn::BlockActivations& a) {
  Impl& s = *impl_;
  const int64_t base = s.block_at(a.layer);
  // Replicated over tp unless tp splits tokens: the group's rank 0 counts them.
  if (s.tp_rank == 0 || s.splits_tokens) {
    add_tensor_stats(a.output, nullptr, s.sums, base + kResid);
    add_tensor_stats(a.attn, nullptr, s.sums, base + kAttn);
    add_tensor_stats(a.mlp, nullptr, s.sums, base + kMlp);
    s.count(a.layer, 0) += static_cast<double>(a.output.numel());
  }
  // The GELU inputs and the attention scores are recomputed from the LayerNorm outputs with this
  // rank's columns of c_fc and c_attn (its heads): each rank adds its own part. Under sequence
  // parallelism a rank holds other tokens than its columns see, so they are left out.
  if (s.splits_tokens) return;
  const nn::Linear& c_fc = a.block.mlp().c_fc();
  Tensor pre = ops::linear(Variable(a.ln_2), c_fc.weight, c_fc.bias).data();
  add_tensor_stats(pre, nullptr, s.sums, base + kGelu);
  s.count(a.layer, 1) += static_cast<double>(pre.numel());
  const nn::Linear& c_attn = a.block.attention().c_attn();
  Tensor qkv = ops::linear(Variable(a.ln_1), c_attn.weight, c_attn.bias).data();
  const int local_heads = s.n_head / s.tp_size;
  add_attention_entropy(qkv, local_heads, s.sums, base + kEntropy + static_cast<int64_t>(s.tp_rank) * local_heads);
  if (s.tp_rank == 0) s.count(a.layer, 2) += static_cast<double>(qkv.size(0) * qkv.size(1));
}

LayerStatsResult LayerStats::after_step(int64_t step) {
  Impl& s = *impl_;
  ND_CHECK(s.sums.defined(), "layer statistics: after_step without before_step");
  s.param_list->add_to(s.sums);
  for (size_t i = 0; i < s.params.size(); ++i)
    s.counts[static_cast<size_t>(s.n_layer) * kBlockCounts + i] = s.values[i];
  std::vector<double> all = s.sums.to(Device::cpu()).to_double_vector();  // the one wait
  all.insert(all.end(), s.counts.begin(), s.counts.end());
  if (s.ranks.world && s.ranks.world->size() > 1)
    s.ranks.world->host_allreduce(all.data(), static_cast<int>(all.size()), dist::HostReduce::Sum);
  const double* sum = all.data();
  const double* count = all.data() + s.device_sums;

  LayerStatsResult r;
  r.step = step;
  std::vector<double> block_grad_sq(s.n_layer, 0.0);
  for (size_t i = 0; i < s.params.size(); ++i) {
    const double* t = sum + static_cast<int64_t>(i) * kTensorSums;
    const double n = count[static_cast<size_t>(s.n_layer) * kBlockCounts + i];
    // Under ZeRO the engine leaves a gradient (zeros where none came) for every owned element.
    const bool has_grad = s.optimizer.sharded() || s.optimizer.flat().has_gradient(s.entry_of[i]);
    TensorStats ts;
    ts.name = s.params[i].first;
    ts.grad_norm = has_grad ? std::sqrt(t[kSumOfSquares]) : kNaN;
    ts.grad_underflow_bf16 = has_grad ? ratio(t[kBf16Underflow], n) : kNaN;
    ts.grad_underflow_fp16 = has_grad ? ratio(t[kFp16Underflow], n) : kNaN;
    ts.weight_norm = std::sqrt(t[kStatsPerSlot + kSumOfSquares]);
    ts.update_ratio = ratio(std::sqrt(t[2 * kStatsPerSlot + kSumOfSquares]), ts.weight_norm);
    r.tensors.push_back(ts);
    const int layer = s.block_of[i];
    if (has_grad && layer >= 0 && layer < s.n_layer) block_grad_sq[layer] += t[kSumOfSquares];
  }
  for (int l = 0; l < s.n_layer; ++l) {
    const double* b = sum + s.block_at(l);
    const double* c = count + static_cast<size_t>(l) * kBlockCounts;
    BlockStats bs;
    bs.layer = l;
    bs.grad_norm = std::sqrt(block_grad_sq[l]);
    bs.resid_rms = std::sqrt(ratio(b[kResid + kSumOfSquares], c[0]));
    bs.attn_rms = std::sqrt(ratio(b[kAttn + kSumOfSquares], c[0]));
    bs.mlp_rms = std::sqrt(ratio(b[kMlp + kSumOfSquares], c[0]));
    bs.gelu_saturated = ratio(b[kGelu + kGeluSaturated], c[1]);
    for (int h = 0; h < s.n_head; ++h) bs.attn_entropy.push_back(ratio(b[kEntropy + h], c[2]));
    r.blocks.push_back(bs);
  }
  s.sums = Tensor();
  return r;
}

std::string LayerStatsResult::json() const {
  std::ostringstream out;
  out << "{\"step\":" << step << ",\"layer_stats\":{\"tensors\":{";
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorStats& t = tensors[i];
    out << (i ? "," : "") << "\"" << t.name << "\":{\"grad_norm\":" << json_number(t.grad_norm)
        << ",\"weight_norm\":" << json_number(t.weight_norm) << ",\"update_ratio\":" << json_number(t.update_ratio)
        << ",\"grad_underflow_bf16\":" << json_number(t.grad_underflow_bf16)
        << ",\"grad_underflow_fp16\":" << json_number(t.grad_underflow_fp16) << "}";
  }
  out << "},\"blocks\":[";
  for (size_t i = 0; i < blocks.size(); ++i) {
    const BlockStats& b = blocks[i];
    out << (i ? "," : "") << "{\"layer\":" << b.layer << ",\"grad_norm\":" << json_number(b.grad_norm)
        << ",\"resid_rms\":" << json_number(b.resid_rms) << ",\"attn_rms\":" << json_number(b.attn_rms)
        << ",\"mlp_rms\":" << json_number(b.mlp_rms) << ",\"gelu_saturated\":" << json_number(b.gelu_saturated)
        << ",\"attn_entropy\":[";
    for (size_t h = 0; h < b.attn_entropy.size(); ++h) out << (h ? "," : "") << json_number(b.attn_entropy[h]);
    out << "]}";
  }
  out << "]}}";
  return out.str();
}

}  // namespace nd::train
