// --init-from: a new run (fresh optimizer, step 0) that starts from existing weights, either a
// nanodist checkpoint (a file, or a run directory's newest) or a Hugging Face GPT-2 directory
// (config.json + model.safetensors, as scripts/export_hf.py writes and GPT-2's published weights
// come). The model's shape comes from the source; --block-size may be smaller (the position
// embedding is cut, as nanoGPT's crop_block_size does).
#pragma once
#include <functional>
#include <string>

#include "dist/parallel/tp_mappings.h"
#include "nn/gpt.h"
#include "train/ckpt/checkpoint.h"
#include "train/config.h"
#include "train/optimizer.h"

namespace nd::train {

struct InitSource {
  std::string path;            // the checkpoint file, or the Hugging Face directory
  bool hugging_face = false;
  nn::GPTConfig model;         // its shape (vocab_size = its vocabulary)
  std::string tokenizer_text;  // its nanodist tokenizer file ("" when it has none)
};

// True when `path` is a directory holding config.json and model.safetensors.
bool is_hugging_face_dir(const std::string& path);

// Reads what `path` holds (for a Hugging Face directory only config.json and, where present, the
// nanodist_tokenizer.txt that export_hf.py writes); nd::Error (input) when it is neither kind,
// or a Hugging Face model other than GPT-2.
InitSource describe_init_source(const std::string& path);

// Sets the model flags of `config` (n-layer, n-head, n-embd, block-size, bias, no-layernorm,
// no-residual) that `given` says the user did not set to the source's; nd::Error (input) naming
// the flag when a given one differs (--block-size may be smaller than the source's).
void take_model_shape(TrainConfig& config, const InitSource& source,
                      const std::function<bool(const std::string& flag)>& given);

// The source's weights as full CPU f32 tensors under nanodist's names (CheckpointData::params;
// m and v zero, for a fresh optimizer), the position embedding cut to `block_size` rows.
CheckpointData initial_weights(const InitSource& source, int block_size);

// Loads --init-from into a freshly built model and optimizer (the optimizer's f32 master weights
// too; its moments and step stay zero). Checks that the model has the source's shape and that the
// data were tokenized with the source's tokenizer (`data_tokenizer_text`: DIR/tokenizer.txt, ""
// for llm.c or nanoGPT data). `tp`: the model's tensor-parallel group. Returns the source's path for
// the log.
std::string load_initial_weights(const TrainConfig& config, const std::string& data_tokenizer_text, nn::GPT& model,
                                 AdamW& optimizer, const dist::TensorParallel& tp = {});

// The tokenizer file of a checkpoint or exported directory, for `prepare --tokenizer-from`;
// nd::Error (input) when it has none.
std::string tokenizer_text_of(const std::string& path);

}  // namespace nd::train
