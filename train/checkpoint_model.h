// Between a live run and CheckpointData: the /config attributes of a model and a TrainConfig,
// copying parameters and AdamW moments out and back in, and the checks that refuse to load a
// checkpoint into a model of another shape or with another vocabulary.
#pragma once
#include <memory>
#include <string>

#include "data/tokenizer.h"
#include "nn/gpt.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/optimizer.h"

namespace nd::train {

// The model fields (n_layer, ..., vocab_size, padded_vocab_size, use_layernorm, use_residual)
// followed by every train flag (underscored names), as /config attributes.
std::vector<std::pair<std::string, AttrValue>> config_attributes(const nn::GPTConfig& model, const TrainConfig& train);

// The model a checkpoint was trained with; nd::Error naming `source` on a missing field.
nn::GPTConfig model_config_from_attributes(const std::vector<std::pair<std::string, AttrValue>>& attrs,
                                           const std::string& source);

// nd::Error unless the checkpoint's model has the same shape (layers, heads, width, context,
// vocabulary, bias and ablation switches) as `model`; the message names each differing field.
void check_same_model(const nn::GPTConfig& checkpoint, const nn::GPTConfig& model, const std::string& source);

// Parameters (and moments, when `optimizer` is not null) as CPU f32 copies.
void store_model(const nn::GPT& model, const AdamW* optimizer, CheckpointData& data);
// Copies parameters (and moments) from `data` into the model's tensors on its device; every
// name must be present with the same shape.
void load_model(const CheckpointData& data, const std::string& source, nn::GPT& model, AdamW* optimizer);

// Parses the text of a tokenizer file (as stored in /tokenizer); `source` names it in errors.
// Empty text (a run on llm.c or nanoGPT data) is an error saying that there is no tokenizer.
std::unique_ptr<Tokenizer> tokenizer_from_text(const std::string& text, const std::string& source);

}  // namespace nd::train
