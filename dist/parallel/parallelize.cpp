// parallelize: the plan's checks, its layers and stage; FP8 on named linears; the FSDP hooks.
#include "dist/parallel/parallelize.h"

#include <map>
#include <string>

#include "dist/parallel/tensor_parallel_layers.h"

namespace nd::dist {

std::unique_ptr<nn::GPT> parallelize(const nn::GPTConfig& config, Generator& init_gen, Device device, DType dtype,
                                     const ParallelPlan& plan) {
  config.validate();
  const TensorParallel& tp = plan.tp;
  check_tensor_parallel_shape(config.n_embd, config.n_head, tp.size());
  ND_CHECK(config.vocab_rows() % tp.size() == 0,
           "tensor-parallel size " << tp.size() << " does not divide the " << config.vocab_rows()
                                   << " vocabulary rows (vocab_size " << config.vocab_size << ", padded_vocab_size "
                                   << config.padded_vocab_size << "); pad to "
                                   << nn::padded_vocab_rows(config.vocab_size, tp.size(), false));
  if (!tp.active()) return std::make_unique<nn::GPT>(config, init_gen, device, dtype, plan.stage);
  const TensorParallelLayers layers(tp);
  return std::make_unique<nn::GPT>(config, init_gen, device, dtype, plan.stage, layers);
}

namespace {

// Which of a layer's quantised tensors differ between the ranks of its tensor-parallel group, so
// that their amaxes are agreed (max) over it: the weight when it is split; with it an Expand
// linear's (column-parallel: x the same on every rank) output gradient, a Project linear's
// (row-parallel: the output's gradient the same on every rank) input features.
nn::Fp8LinearSharding fp8_sharding(const nn::ParamInfo& weight, nn::LinearRole role) {
  if (weight.shards == 1) return {};
  if (role == nn::LinearRole::Expand) return {/*x=*/false, /*w=*/true, /*dout=*/true};
  return {/*x=*/true, /*w=*/true, /*dout=*/false};
}

}  // namespace

void use_fp8(nn::GPT& model, nn::Fp8LinearScaling& scaling, const Fp8Linears& linears) {
  std::map<const nn::Module*, std::string> names;
  for (const auto& [name, module] : model.named_modules()) names[module] = name;
  std::map<std::string, nn::ParamInfo> infos;
  for (const auto& [name, info] : model.named_param_infos()) infos[name] = info;
  auto convert = [&](nn::Linear& linear) {
    const std::string& name = names.at(&linear);
    linear.use_fp8(scaling.add(name, fp8_sharding(infos.at(name + ".weight"), linear.spec().role)));
  };
  for (int i = 0; i < model.num_blocks(); ++i) {
    nn::Block& block = model.block(i);
    if (linears.attn) {
      convert(block.attention().c_attn());
      convert(block.attention().c_proj());
    }
    if (linears.mlp) {
      convert(block.mlp().c_fc());
      convert(block.mlp().c_proj());
    }
  }
  // The head's scalars keep the name of nanoGPT's head module: the FP8 state is saved by name. Split,
  // it is column-parallel over the vocabulary.
  if (linears.head && model.is_last_stage()) {
    nn::TokenEmbedding& head = *model.token_embedding();
    head.use_fp8(scaling.add("lm_head", fp8_sharding(infos.at(names.at(&head) + ".weight"), nn::LinearRole::Expand)));
  }
}

void fully_shard(nn::GPT& model, UnitHooks* engine) { model.set_block_hooks(engine); }

nn::MaxOverGroup max_over(Comm* group) {
  if (group == nullptr || group->size() == 1) return nullptr;
  return [group](std::vector<double>& values) {
    group->host_allreduce(values.data(), static_cast<int>(values.size()), HostReduce::Max);
  };
}

}  // namespace nd::dist
