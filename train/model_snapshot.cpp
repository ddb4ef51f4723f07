// Snapshots of owned slices (device-to-host copies of row ranges) and loads of held blocks.
#include "train/model_snapshot.h"

#include <cstdlib>
#include <cstring>

#include "tensor/error.h"

#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>

#include "tensor/cuda_check.h"
#include "tensor/cuda_stream.h"
#endif

namespace nd::train {
namespace {

// The tied token embedding: its rows past vocab_size are padding (zeros, never looked up).
constexpr const char* kTokenEmbedding = "transformer.wte.weight";

struct Entry {  // one tensor of the model as a checkpoint sees it
  std::string group;
  std::string name;
  Tensor tensor;  // shares the model's (or optimizer's) storage
  TensorPlacement placement;
  int holder = 0, holders = 1;
};

// `writing`: the tensors this rank writes; a pipeline's last stage leaves its copy of the tied
// embedding to the first stage (the same values after every step).
std::vector<Entry> entries_of(const nn::GPT& model, const AdamW* optimizer, int dp_rank, int dp_size,
                              bool writing = false) {
  const dist::TensorParallel& tp = model.tensor_parallel();
  auto specs = model.named_shard_specs();
  auto named = model.named_parameters();
  std::vector<Entry> out;
  for (size_t i = 0; i < named.size(); ++i) {
    const std::string& name = named[i].first;
    if (writing && name == kTokenEmbedding && !model.is_first_stage()) continue;
    const dist::ShardSpec spec = specs.at(i).second;
    const ParamState* state = nullptr;
    if (optimizer != nullptr)
      for (const ParamState& s : optimizer->states())
        if (s.name == name) state = &s;
    const Tensor& value = state != nullptr && state->master.defined() ? state->master : named[i].second.data();
    TensorPlacement p;
    p.local_shape = value.shape();
    p.full_shape = value.shape();
    p.spec = spec;
    p.tp_rank = tp.rank();
    p.tp_size = tp.size();
    if (spec.sharded()) p.full_shape[spec.dim] *= tp.size();
    if (name == kTokenEmbedding) p.full_shape[0] = model.config().vocab_size;
    const bool split_by_tp = spec.sharded() && tp.size() > 1;
    const int holder = split_by_tp ? dp_rank : dp_rank * tp.size() + tp.rank();
    const int holders = split_by_tp ? dp_size : dp_size * tp.size();
    out.push_back(Entry{kCheckpointGroups[0], name, value, p, holder, holders});
    if (state != nullptr) {
      out.push_back(Entry{kCheckpointGroups[1], name, state->m, p, holder, holders});
      out.push_back(Entry{kCheckpointGroups[2], name, state->v, p, holder, holders});
    }
  }
  return out;
}

// True when `box` of a tensor of `shape` is a range of rows (whole in every other dimension):
// then it is one contiguous run of memory.
bool is_row_range(const Hyperslab& box, const Shape& shape) {
  for (size_t d = 1; d < shape.size(); ++d)
    if (box.offset[d] != 0 || box.count[d] != shape[d]) return false;
  return true;
}

// Copies `count` f32 values from a tensor's memory at element `offset` to host `dst`.
void copy_to_host(const Tensor& t, int64_t offset, int64_t count, float* dst) {
  if (t.device().is_cpu()) {
    std::memcpy(dst, t.data<float>() + offset, static_cast<size_t>(count) * sizeof(float));
    return;
  }
#if NANODIST_WITH_CUDA
  CUDA_CHECK(cudaMemcpyAsync(dst, static_cast<const float*>(t.raw_data()) + offset, static_cast<size_t>(count) * 4,
                             cudaMemcpyDeviceToHost, compute_stream(t.device().index)));
#else
  ND_FAIL("this nanodist was built without CUDA");
#endif
}

}  // namespace

ModelSnapshot::~ModelSnapshot() {
  for (Buffer& b : buffers_) {
#if NANODIST_WITH_CUDA
    if (b.pinned) {
      cudaFreeHost(b.data);
      continue;
    }
#endif
    std::free(b.data);
  }
}

float* ModelSnapshot::buffer(size_t index, size_t count, bool pinned) {
  if (index >= buffers_.size()) buffers_.resize(index + 1);
  Buffer& b = buffers_[index];
  if (b.count == count && b.pinned == pinned && b.data != nullptr) return b.data;
#if NANODIST_WITH_CUDA
  if (b.pinned) cudaFreeHost(b.data);
#endif
  if (!b.pinned) std::free(b.data);
  b = Buffer{};
  const size_t bytes = std::max<size_t>(count, 1) * sizeof(float);
#if NANODIST_WITH_CUDA
  if (pinned) {
    void* p = nullptr;
    CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
    b = Buffer{static_cast<float*>(p), count, true};
    return b.data;
  }
#endif
  b = Buffer{static_cast<float*>(std::malloc(bytes)), count, false};
  ND_CHECK(b.data != nullptr, "cannot allocate " << bytes << " bytes for a checkpoint snapshot");
  return b.data;
}

void ModelSnapshot::take(const nn::GPT& model, const AdamW* optimizer, int dp_rank, int dp_size, bool copy) {
  slices_.clear();
  held_.clear();
  const bool on_gpu = model.device().is_cuda();
  size_t index = 0;
  for (const Entry& e : entries_of(model, optimizer, dp_rank, dp_size, /*writing=*/true)) {
    const Tensor* src = &e.tensor;
    Tensor host_f32;
    if (src->dtype() != DType::F32) {  // a parameter without an f32 master: convert on the host
      host_f32 = src->to(Device::cpu()).to(DType::F32);
      src = &host_f32;
    }
    for (const BlockMap& b : owned_blocks(e.placement, e.name, e.holder, e.holders)) {
      const bool rows = is_row_range(b.local, src->shape());
      int64_t row = 1;
      for (size_t d = 1; d < src->shape().size(); ++d) row *= src->shape()[d];
      const int64_t first = b.local.offset.empty() ? 0 : b.local.offset[0] * row;
      if (!copy && rows && src->device().is_cpu()) {
        held_.push_back(*src);
        slices_.push_back(OwnedSlice{e.group, e.name, e.placement.full_shape, b.full, src->data<float>() + first});
        continue;
      }
      float* dst = buffer(index++, static_cast<size_t>(b.full.numel()), on_gpu);
      if (rows) {
        copy_to_host(*src, first, b.full.numel(), dst);
      } else {
        Tensor host = src->device().is_cpu() ? *src : src->to(Device::cpu());
        copy_box(static_cast<const char*>(host.raw_data()), host.shape(), b.local.offset, reinterpret_cast<char*>(dst),
                 b.local.count, std::vector<int64_t>(b.local.count.size(), 0), b.local.count, sizeof(float));
      }
      slices_.push_back(OwnedSlice{e.group, e.name, e.placement.full_shape, b.full, dst});
    }
  }
#if NANODIST_WITH_CUDA
  if (on_gpu) CUDA_CHECK(cudaStreamSynchronize(compute_stream(model.device().index)));
#endif
}

int64_t ModelSnapshot::bytes() const {
  int64_t n = 0;
  for (const OwnedSlice& s : slices_) n += s.box.numel() * 4;
  return n;
}

void load_model_slices(CheckpointReader& reader, nn::GPT& model, AdamW* optimizer) {
  const auto names = model.named_parameters();
  const size_t stored = reader.names(kCheckpointGroups[0]).size();
  // A pipeline stage holds some of them (each one checked below).
  const bool whole_model = model.is_first_stage() && model.is_last_stage();
  ND_CHECK_INPUT(!whole_model || stored == names.size(),
                 reader.path() << " holds " << stored << " parameters, the model has " << names.size());
  // Each tensor to fill: the parameter (its data, and its master) and the moments.
  for (const Entry& e : entries_of(model, optimizer, 0, 1)) {
    const std::string what = "/" + e.group + "/" + e.name;
    ND_CHECK_INPUT(reader.has(e.group, e.name), reader.path() << " has no " << what);
    const std::vector<int64_t> stored_shape = reader.full_shape(e.group, e.name);
    ND_CHECK_INPUT(stored_shape == e.placement.full_shape, reader.path() << ": " << what << " has shape "
                                                                         << shape_str(stored_shape) << ", the model has "
                                                                         << shape_str(e.placement.full_shape));
    Tensor host = Tensor::zeros(e.tensor.shape(), DType::F32, Device::cpu());  // padding rows stay zero
    for (const BlockMap& b : held_blocks(e.placement)) {
      std::vector<float> block(static_cast<size_t>(b.full.numel()));
      reader.read_box(e.group, e.name, b.full, block.data());
      copy_box(reinterpret_cast<const char*>(block.data()), b.local.count, std::vector<int64_t>(b.local.count.size(), 0),
               static_cast<char*>(host.raw_data()), host.shape(), b.local.offset, b.local.count, sizeof(float));
    }
    Tensor dst = e.tensor;
    dst.copy_from(dst.dtype() == DType::F32 ? host : host.to(dst.dtype()));
    // A bf16 parameter with an f32 master: the parameter gets the master's rounded value.
    if (e.group == kCheckpointGroups[0] && optimizer != nullptr) {
      for (const auto& [name, param] : names) {
        Tensor data = param.data();
        if (name == e.name && !data.shares_storage(dst))
          data.copy_from(data.dtype() == DType::F32 ? host : host.to(data.dtype()));
      }
    }
  }
}

}  // namespace nd::train
