#include "nn/gpt.h"

#include <climits>

#include "autograd/backward_hook.h"
#include "autograd/checkpoint.h"
#include "autograd/without_forward.h"

namespace nd::nn {

namespace {

// A Module that only holds a weight under ".weight", so names read like nanoGPT's
// (transformer.wpe.weight), which the PyTorch tools rely on.
class WeightHolder : public Module {
 public:
  WeightHolder(Tensor init, const ParamInfo& info) { weight = register_parameter("weight", std::move(init), info); }
  Variable weight;
};

// A Module of submodules only, to give the parameter names their "transformer." prefix.
class Group : public Module {
 public:
  template <typename M>
  std::shared_ptr<M> add(const std::string& name, std::shared_ptr<M> m) {
    return register_module(name, std::move(m));
  }
};

BlockShape block_shape(const GPTConfig& c) {
  return BlockShape{c.n_embd, c.n_head, c.n_layer, c.bias, c.dropout, c.attention, c.recompute};
}

}  // namespace

int padded_vocab_rows(int vocab_size, int tp, bool on_cuda) {
  ND_CHECK(vocab_size >= 1 && tp >= 1, "padded_vocab_rows: vocab_size " << vocab_size << ", tp " << tp);
  if (!on_cuda && tp == 1) return vocab_size;
  const int64_t multiple = 128 * static_cast<int64_t>(tp);
  const int64_t rows = (vocab_size + multiple - 1) / multiple * multiple;
  ND_CHECK_INPUT(rows <= INT32_MAX, "a vocabulary of " << vocab_size << " padded to a multiple of 128 x tp " << tp
                                                       << " has more than 2^31 rows");
  return static_cast<int>(rows);
}

void GPTConfig::validate(FieldNames names) const {
  // The train flags name the same fields with dashes: --n-layer for n_layer.
  auto name = [names](const char* field) {
    std::string out = field;
    if (names == FieldNames::Flags) {
      for (char& c : out)
        if (c == '_') c = '-';
      out = "--" + out;
    }
    return out;
  };
  ND_CHECK_INPUT(n_layer >= 1, name("n_layer") << " must be >= 1, got " << n_layer);
  ND_CHECK_INPUT(n_head >= 1, name("n_head") << " must be >= 1, got " << n_head);
  ND_CHECK_INPUT(n_embd >= 1, name("n_embd") << " must be >= 1, got " << n_embd);
  ND_CHECK_INPUT(n_embd % n_head == 0,
           name("n_embd") << " " << n_embd << " is not divisible by " << name("n_head") << " " << n_head);
  ND_CHECK_INPUT(block_size >= 1, name("block_size") << " must be >= 1, got " << block_size);
  ND_CHECK_INPUT(vocab_size >= 1, name("vocab_size") << " must be >= 1, got " << vocab_size);
  ND_CHECK_INPUT(padded_vocab_size == 0 || padded_vocab_size >= vocab_size,
           "padded_vocab_size " << padded_vocab_size << " is smaller than vocab_size " << vocab_size);
  ND_CHECK_INPUT(dropout >= 0.0f && dropout < 1.0f, name("dropout") << " must be in [0, 1), got " << dropout);
}

Block::Block(const GPTConfig& c, Generator& gen, Placement at, int layer, const LayerBuilder& layers)
    : use_residual_(c.use_residual), recompute_(c.recompute == Recompute::Block), layer_(layer) {
  ln_1_ = register_module("ln_1", std::make_shared<LayerNorm>(c.n_embd, c.bias, c.use_layernorm, at));
  attn_ = register_module("attn", std::make_shared<CausalSelfAttention>(block_shape(c), gen, at, layers));
  ln_2_ = register_module("ln_2", std::make_shared<LayerNorm>(c.n_embd, c.bias, c.use_layernorm, at));
  mlp_ = register_module("mlp", std::make_shared<MLP>(block_shape(c), gen, at, layers));
  assign_block(layer);
}

Variable Block::forward(const Variable& x, Generator& dropout_gen) const {
  if (!recompute_) return run(x, dropout_gen, /*output_read=*/true);
  return ops::checkpoint(
      [this](const Variable& in, Generator& gen, bool output_read) { return run(in, gen, output_read); }, x,
      parameters(), dropout_gen);
}

Variable Block::run(const Variable& x, Generator& dropout_gen, bool output_read) const {
  Variable n1 = ln_1_->forward(x);
  Variable a = attn_->forward(n1, dropout_gen);
  Variable h = use_residual_ ? ops::add(x, a) : a;
  Variable n2 = ln_2_->forward(h);
  // Unread (the rerun), the block's tail is recorded without its forward: the MLP from c_proj on and
  // the residual add, whose values backward never reads (it needs c_proj's input, not its output).
  const bool skip_tail = !output_read;
  Variable m = mlp_->forward(n2, dropout_gen, !skip_tail);
  Variable out;
  {
    WithoutForward tail(skip_tail);
    out = use_residual_ ? ops::add(h, m) : m;
  }
  if (observer_ && output_read)
    observer_->on_block({layer_, *this, n1.data(), a.data(), n2.data(), m.data(), out.data()});
  return out;
}

void GPT::set_block_observer(BlockObserver* observer) {
  for (auto& block : blocks_) block->set_observer(observer);
}

GPT::GPT(const GPTConfig& config, Generator& gen, Device device, DType dtype, const GPTStage& stage,
         const LayerBuilder& layers)
    : config_(config), at_{device, dtype}, first_block_(stage.first_block) {
  config_.validate();
  const GPTConfig& c = config_;
  std::vector<std::pair<int, int>> ranges = stage.chunks;
  if (ranges.empty()) ranges.push_back({stage.first_block, stage.end_block < 0 ? c.n_layer : stage.end_block});
  for (size_t k = 0; k < ranges.size(); ++k)
    ND_CHECK(0 <= ranges[k].first && ranges[k].first < ranges[k].second && ranges[k].second <= c.n_layer &&
                 (k == 0 || ranges[k - 1].second <= ranges[k].first),
             "GPT stage: blocks [" << ranges[k].first << ", " << ranges[k].second << ") of " << c.n_layer);
  first_block_ = ranges.front().first;
  last_end_ = ranges.back().second;
  const bool first = first_block_ == 0, last = last_end_ == c.n_layer;
  auto transformer = register_module("transformer", std::make_shared<Group>());
  // Padding rows are never looked up nor predicted: zeros keep them inert under weight decay, and
  // drawing only the real rows gives the same initial model with or without padding.
  if (first || last) {
    wte_ = transformer->add("wte", layers.token_embedding({c.vocab_rows(), c.vocab_size, c.n_embd, 0.02}, gen, at_));
  } else {
    gen.advance(static_cast<uint64_t>(c.vocab_size) * c.n_embd);
  }
  if (first) {
    ParamInfo info;
    info.embedding = true;
    info.decay = true;
    Tensor wpe = normal_shard({c.block_size, c.n_embd}, 0.0, 0.02, gen, at_);
    wpe_ = transformer->add("wpe", std::make_shared<WeightHolder>(wpe, info))->weight;
  } else {
    gen.advance(static_cast<uint64_t>(c.block_size) * c.n_embd);
  }
  // A block draws c_attn (3C x C), attn.c_proj (C x C), c_fc (4C x C) and mlp.c_proj (C x 4C).
  const uint64_t block_draws = 12ull * c.n_embd * c.n_embd;
  auto h = transformer->add("h", std::make_shared<Group>());
  int drawn = 0;  // blocks the generator has passed
  for (const auto& [begin, end] : ranges) {
    gen.advance(block_draws * static_cast<uint64_t>(begin - drawn));
    for (int i = begin; i < end; ++i)
      blocks_.push_back(h->add(std::to_string(i), std::make_shared<Block>(c, gen, at_, i, layers)));
    drawn = end;
  }
  gen.advance(block_draws * static_cast<uint64_t>(c.n_layer - drawn));
  if (last) ln_f_ = transformer->add("ln_f", std::make_shared<LayerNorm>(c.n_embd, c.bias, c.use_layernorm, at_));
  dropout_ = layers.dropout();
}

GPT::Output GPT::forward(const Tensor& idx, const Tensor* targets, Generator& dropout_gen,
                         const ops::LossGradient* loss_gradient) const {
  Output out = head(blocks(embed(idx, dropout_gen), dropout_gen), targets, loss_gradient);
  // Overwritten (or to be treated so whichever kernel ran): nobody may read them.
  if (loss_gradient && loss_gradient->overwrite_logits) out.logits = Variable();
  return out;
}

Variable GPT::embed(const Tensor& idx, Generator& dropout_gen) const {
  ND_CHECK(is_first_stage(), "GPT::embed on a stage without the embeddings (first block " << first_block_ << ")");
  ND_CHECK(idx.ndim() == 2, "GPT input must be (B, T) token ids, got " << idx.str());
  ND_CHECK_INPUT(idx.size(1) <= config_.block_size,
                 "sequence length " << idx.size(1) << " exceeds block_size " << config_.block_size);
  return dropout_->forward(wte_->embed(idx, wpe_), config_.dropout, dropout_gen, training());
}

Variable GPT::blocks(Variable x, Generator& dropout_gen, int first, int last) const {
  const int end = last < 0 ? static_cast<int>(blocks_.size()) : last;
  ND_CHECK(0 <= first && first <= end && end <= static_cast<int>(blocks_.size()),
           "GPT::blocks: range [" << first << ", " << end << ") of " << blocks_.size() << " blocks");
  for (int i = first; i < end; ++i) {
    if (block_hooks_ == nullptr) {
      x = blocks_[i]->forward(x, dropout_gen);
      continue;
    }
    const int index = blocks_[i]->layer();  // global: an interleaved stage's chunks are not contiguous
    BlockHooks* hooks = block_hooks_;
    hooks->before_forward(index);
    x = blocks_[i]->forward(x, dropout_gen);
    hooks->after_forward(index);
    x = ops::on_backward(x, [hooks, index] { hooks->before_backward(index); });
  }
  return x;
}

GPT::Output GPT::head(const Variable& x, const Tensor* targets, const ops::LossGradient* loss_gradient) const {
  ND_CHECK(!loss_gradient || targets, "GPT::head: a loss_gradient without targets (no loss to seed)");
  ND_CHECK(is_last_stage(), "GPT::head on a stage without the head (its blocks end before the last)");
  Output out;
  out.logits = wte_->logits(ln_f_->forward(x));
  if (targets) out.loss = wte_->loss(out.logits, *targets, loss_gradient);
  return out;
}

double GPT::flops_per_token(int T) const {
  double N = 0;  // parameters of the unsplit model: a piece counts as many times as there are pieces
  const NamedParameters params = named_parameters();
  const NamedParamInfos infos = named_param_infos();
  for (size_t i = 0; i < params.size(); ++i)
    N += static_cast<double>(params[i].second.data().numel()) * infos[i].second.shards;
  return 6.0 * N + 12.0 * config_.n_layer * config_.n_embd * static_cast<double>(T);
}

}  // namespace nd::nn
