// Between a live run and CheckpointData: copying parameters and AdamW moments out and back in
// (the /config attributes and the same-model check are train/model_config.h's).
#pragma once
#include <memory>
#include <string>

#include "data/tokenizer.h"
#include "nn/gpt.h"
#include "train/checkpoint.h"
#include "train/model_config.h"
#include "train/optimizer.h"

namespace nd::train {

// Parameters (and moments, when `optimizer` is not null) as CPU f32 copies.
void store_model(const nn::GPT& model, const AdamW* optimizer, CheckpointData& data);
// Copies parameters (and moments) from `data` into the model's tensors on its device; every
// name must be present with the same shape.
void load_model(const CheckpointData& data, const std::string& source, nn::GPT& model, AdamW* optimizer);

// Parses the text of a tokenizer file (as stored in /tokenizer); `source` names it in errors.
// Empty text (a run on llm.c or nanoGPT data) is an error saying that there is no tokenizer.
std::unique_ptr<Tokenizer> tokenizer_from_text(const std::string& text, const std::string& source);

}  // namespace nd::train
