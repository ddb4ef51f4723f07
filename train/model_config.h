// The one mapping between a TrainConfig and the model it trains: the GPTConfig for a vocabulary,
// the /config attributes of a checkpoint, the model read back from them, and the same-model check.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "nn/gpt.h"
#include "train/ckpt/checkpoint.h"
#include "train/config.h"

namespace nd::train {

// The model `config` trains on a vocabulary of `vocab_size` tokens (padded on the GPU).
nn::GPTConfig model_config_for(const TrainConfig& config, int64_t vocab_size);

// The attention kernel of --attention: ours; cudnn (an input error naming the reason where it
// cannot run: CPU, f32, a build or GPU without cuDNN attention); auto = cudnn where it can run,
// else ours.
ops::AttentionKernel attention_kernel_for(const TrainConfig& config);

// The model fields (n_layer, ..., vocab_size, padded_vocab_size, use_layernorm, use_residual)
// followed by every train flag (underscored names), as /config attributes.
std::vector<std::pair<std::string, AttrValue>> config_attributes(const nn::GPTConfig& model, const TrainConfig& train);

// The model a checkpoint was trained with; nd::Error naming `source` on a missing field.
nn::GPTConfig model_config_from_attributes(const std::vector<std::pair<std::string, AttrValue>>& attrs,
                                           const std::string& source);

// nd::Error (input) naming `source` unless `weights` (name -> shape, nanodist's names) hold the
// token and position embeddings and each of the n_layer blocks' attention output projection at
// the model's width: a file whose config claims a larger model than its weights is refused before
// that model is built (each block's other tensors are a fixed multiple of that projection).
void check_weights_hold_model(const nn::GPTConfig& model, const std::map<std::string, Shape>& weights,
                              const std::string& source);
// model_config_from_attributes of the checkpoint's /config, checked against its parameters.
nn::GPTConfig model_config_from_checkpoint(const CheckpointData& data, const std::string& source);

// nd::Error unless the checkpoint's model has the same shape (layers, heads, width, context,
// vocabulary, bias and ablation switches) as `model`; the message names each differing field.
void check_same_model(const nn::GPTConfig& checkpoint, const nn::GPTConfig& model, const std::string& source);

}  // namespace nd::train
