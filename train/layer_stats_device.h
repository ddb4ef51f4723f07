// Device dispatch of the per-layer statistics kernels (kernels/{cpu,cuda}/layer_stats.*): the
// sums of one tensor, the attention entropy, and a fixed list of tensors (the flat buffers'
// views) uploaded once and swept in one launch per dtype. All add into `out`, an F64 tensor on
// the tensors' device, queued on the compute stream without waiting.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "tensor/tensor.h"

namespace nd::train {

// out[index + k] += sum k of x (kernels/layer_stats_slot.h); with `ref`, the sum of squares is of
// x - ref (same shape and dtype). x f32 (or bf16 on a GPU), contiguous.
void add_tensor_stats(const Tensor& x, const Tensor* ref, Tensor& out, int64_t index);

// qkv (B, T, 3C) of NH heads -> out[index + h] += the summed entropy of head h's rows.
void add_attention_entropy(const Tensor& qkv, int64_t NH, Tensor& out, int64_t index);

struct StatTensor {
  Tensor x;
  Tensor ref;  // undefined: none
  int64_t index = 0;
};

// A list of tensors whose addresses never change, swept by add_to (one launch per dtype on a GPU).
class StatTensorList {
 public:
  explicit StatTensorList(std::vector<StatTensor> tensors);
  ~StatTensorList();
  void add_to(Tensor& out) const;

 private:
  std::vector<StatTensor> tensors_;
  struct DeviceLists;
  std::unique_ptr<DeviceLists> device_;  // GPU only
};

}  // namespace nd::train
