// The choices among TrainConfig's flags (train/config.h) that have no type elsewhere, and the
// flag spellings of every choice the config holds as an enum: each parse_* raises the flag's
// one-line input error, each *_name/_text gives the text a checkpoint or run.conf records.
#pragma once
#include <optional>
#include <string>

#include "dist/parallel/parallel_grid.h"
#include "nn/layers.h"
#include "tensor/device.h"
#include "tensor/dtype.h"
#include "train/pipeline_plan.h"

namespace nd::train {

// --attention: ours, cuDNN's fused kernel, or auto (cudnn wherever it runs; model_config.h
// attention_kernel_for resolves it).
enum class AttentionBackend { Ours, Cudnn, Auto };

// --async-save: checkpoints written by a background thread; auto = on for a GPU run (the snapshot
// is pinned host memory), off on the CPU.
enum class AsyncSave { Off, On, Auto };

// --fp8-layers: which linears run their GEMMs in FP8 under --fp8 (default all).
struct Fp8Layers {
  bool attn = true, mlp = true, head = true;
  bool operator==(const Fp8Layers& o) const { return attn == o.attn && mlp == o.mlp && head == o.head; }
};

// The flags' spellings of the types above; parse_* raise the flag's one-line input error.
AttentionBackend parse_attention_backend(const std::string& text);
const char* attention_backend_name(AttentionBackend backend);
AsyncSave parse_async_save(const std::string& text);
const char* async_save_name(AsyncSave mode);  // "false", "true", "auto"
Fp8Layers parse_fp8_layers(const std::string& text);
std::string fp8_layers_text(const Fp8Layers& layers);
nn::Recompute parse_recompute(const std::string& text);  // none | attention | block
const char* recompute_name(nn::Recompute recompute);
// --collectives: dist::parse_collectives under the flag's own error line.
dist::Algorithm parse_collectives_flag(const std::string& text);
// --dtype's spelling: f32, bf16, fp16 (parse_dtype reads it, and f16).
const char* dtype_flag_name(DType dtype);
// --grad-dtype: a dtype, or "" = none (the --dtype's default, train/precision.h).
std::optional<DType> parse_grad_dtype(const std::string& text);

}  // namespace nd::train
