// Between a live run and CheckpointData: copying parameters and AdamW moments out and back in
// (the /config attributes and the same-model check are train/model_config.h's).
#pragma once
#include <memory>
#include <string>

#include "data/tokenizer.h"
#include "dist/parallel/tp_mappings.h"
#include "nn/gpt.h"
#include "train/ckpt/checkpoint.h"
#include "train/model_config.h"
#include "train/optimizer.h"

namespace nd::train {

// Parameters (and moments, when `optimizer` is not null) as full CPU f32 tensors: under tensor
// parallelism a collective over the model's tp group `tp` (every rank of it calls this and gets
// the full tensors, gathered from the shards). The token embedding (and its moments) is stored with
// vocab_size rows, without the padding rows (nn::ParamInfo::used_rows), so a checkpoint does not
// depend on the padding of the run (tp, device) that wrote it.
void store_model(const nn::GPT& model, const AdamW* optimizer, CheckpointData& data,
                 const dist::TensorParallel& tp = {});
// Copies parameters (and moments) from `data` (full tensors) into the model's tensors on its
// device, each rank of `tp` taking its own shard; the token embedding gets zero padding rows past
// vocab_size. Every name must be present with the same shape (the embedding: at least vocab_size
// rows).
void load_model(const CheckpointData& data, const std::string& source, nn::GPT& model, AdamW* optimizer,
                const dist::TensorParallel& tp = {});

// Parses the text of a tokenizer file (as stored in /tokenizer); `source` names it in errors.
// Empty text (a run on llm.c or nanoGPT data) is an error saying that there is no tokenizer.
std::unique_ptr<Tokenizer> tokenizer_from_text(const std::string& text, const std::string& source);

}  // namespace nd::train
