// Snapshots of owned slices (device-to-host copies of row ranges) and loads of held blocks.
#include "train/ckpt/model_snapshot.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "tensor/error.h"

#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>

#include "tensor/cuda_check.h"
#include "tensor/cuda_stream.h"
#endif

namespace nd::train {
namespace {

struct Entry {  // one tensor of the model as a checkpoint sees it
  std::string group;
  std::string name;
  Tensor tensor;  // shares the model's (or optimizer's) storage
  TensorPlacement placement;
  int holder = 0, holders = 1;
};

// `writing`: the tensors this rank writes; a pipeline's last stage leaves its copy of the tied
// embedding to the first stage (the same values after every step). `tp`: the model's group.
std::vector<Entry> entries_of(const nn::GPT& model, const dist::TensorParallel& tp, const AdamW* optimizer,
                              int dp_rank, int dp_size, bool writing = false) {
  auto infos = model.named_param_infos();
  auto named = model.named_parameters();
  std::vector<Entry> out;
  for (size_t i = 0; i < named.size(); ++i) {
    const std::string& name = named[i].first;
    const nn::ParamInfo& info = infos.at(i).second;
    if (writing && info.tied && !model.is_first_stage()) continue;
    const nn::ShardSpec spec = info.split;
    const ParamState* state = nullptr;
    if (optimizer != nullptr)
      for (const ParamState& s : optimizer->states())
        if (s.name == name) state = &s;
    const Tensor& value = state != nullptr && state->master.defined() ? state->master : named[i].second.data();
    TensorPlacement p;
    p.local_shape = value.shape();
    p.full_shape = info.full_shape(value.shape());
    p.spec = spec;
    p.tp_rank = tp.rank();
    p.tp_size = tp.size();
    if (info.used_rows >= 0) p.full_shape[0] = info.used_rows;
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

// The elements [begin, begin + length) (row-major) of a tensor of `shape` (1 or 2 dimensions) as
// boxes: a partial first row, whole rows, a partial last row.
std::vector<Hyperslab> boxes_of_range(const std::vector<int64_t>& shape, int64_t begin, int64_t length) {
  ND_CHECK(shape.size() == 1 || shape.size() == 2,
           "ZeRO checkpoints: tensors of " << shape.size() << " dimensions are not supported");
  if (shape.size() == 1) return {Hyperslab{{begin}, {length}}};
  const int64_t cols = shape[1], end = begin + length;
  std::vector<Hyperslab> boxes;
  int64_t row = begin / cols, col = begin % cols;
  if (col != 0) {
    const int64_t stop = std::min(end, (row + 1) * cols);
    boxes.push_back(Hyperslab{{row, col}, {1, stop - begin}});
    if (stop == end) return boxes;
    ++row;
  }
  const int64_t last_row = end / cols;
  if (last_row > row) boxes.push_back(Hyperslab{{row, 0}, {last_row - row, cols}});
  if (end % cols != 0) boxes.push_back(Hyperslab{{last_row, 0}, {1, end % cols}});
  return boxes;
}

// Reads every block of e's full tensor that this rank holds into a host f32 tensor of the local
// shape (padding rows zero).
Tensor read_local(CheckpointReader& reader, const std::string& group, const std::string& name,
                  const TensorPlacement& placement) {
  Tensor host = Tensor::zeros(placement.local_shape, DType::F32, Device::cpu());
  for (const BlockMap& b : held_blocks(placement)) {
    std::vector<float> block(static_cast<size_t>(b.full.numel()));
    reader.read_box(group, name, b.full, block.data());
    copy_box(reinterpret_cast<const char*>(block.data()), b.local.count, std::vector<int64_t>(b.local.count.size(), 0),
             static_cast<char*>(host.raw_data()), host.shape(), b.local.offset, b.local.count, sizeof(float));
  }
  return host;
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

float* ModelSnapshot::buffer(size_t index, size_t count, bool pinned) {
  if (index >= buffers_.size()) buffers_.resize(index + 1);
  Buffer& b = buffers_[index];
  if (b.count == count && b.pinned == pinned && b.data != nullptr) return b.data;
  std::unique_ptr<HostArena>& arena = arenas_[pinned ? 1 : 0];
  if (!arena) arena = std::make_unique<HostArena>(pinned);
  // Page-aligned, so the part's bytes can go to disk by direct I/O; big chunks on huge pages, which
  // direct I/O pins at a fraction of the cost (huge_pages.h). Touched now (at prepare), so no page
  // fault lands in a save or in the update copying into it.
  b = Buffer{static_cast<float*>(arena->take(std::max<size_t>(count, 1) * sizeof(float))), count, pinned};
  return b.data;
}

// Each rank writes exactly the pieces its shard holds (a replicated tensor's by tp rank 0 only, the
// tied embedding's by the first pipeline stage only), so no rank ever holds more than its shard;
// the masters stand for bf16 parameters, f32 parameters are read at their flat offsets. A box of a
// contiguous piece is contiguous unless a tp block cuts its columns; then it is copied row by row.
void ModelSnapshot::take_sharded(const nn::GPT& model, const dist::TensorParallel& tp, const AdamW& optimizer,
                                 SnapshotMode mode) {
  const FlatOptimizerState& state = optimizer.flat_state();
  dist::FlatParams& flat = const_cast<AdamW&>(optimizer).flat();
  const bool on_gpu = model.device().is_cuda();
  // Parameters without masters are read where the update writes them: the flat buffer, or (ZeRO 3) the shard.
  const bool at_flat_offsets = !state.master.defined() && !optimizer.params_in_shard();
  const Tensor* source[3] = {state.master.defined() ? &state.master : &state.params, &state.m, &state.v};
  ND_CHECK(source[0]->dtype() == DType::F32, "ZeRO checkpoints: parameters without f32 masters must be f32");
  std::map<std::string, int64_t> flat_offset;
  for (const dist::FlatEntry& e : flat.entries()) flat_offset[e.name] = e.offset;
  size_t index = 0;
  for (const Entry& e : entries_of(model, tp, nullptr, 0, 1, /*writing=*/true)) {
    if (!(e.placement.spec.sharded() && tp.size() > 1) && tp.rank() != 0) continue;
    const std::vector<int64_t>& shape = e.placement.local_shape;
    const int64_t cols = shape.size() == 2 ? shape[1] : 1;
    for (const dist::ShardSlice& piece : optimizer.owned_of(e.name)) {
      for (const Hyperslab& box : boxes_of_range(shape, piece.begin, piece.length)) {
        for (const BlockMap& b : held_blocks(e.placement)) {
          const Hyperslab in = intersect(box, b.local);
          if (in.empty()) continue;
          Hyperslab full = in;
          for (size_t d = 0; d < full.offset.size(); ++d) full.offset[d] += b.full.offset[d] - b.local.offset[d];
          const bool two_d = shape.size() == 2;
          const int64_t rows = two_d ? in.count[0] : 1, width = two_d ? in.count[1] : in.count[0];
          const int64_t first = two_d ? in.offset[0] * cols + in.offset[1] : in.offset[0];
          const bool contiguous = rows == 1 || width == cols;
          for (int g = 0; g < 3; ++g) {
            // Element `element` of the tensor in the group's buffer.
            auto at = [&](int64_t element) {
              return (g == 0 && at_flat_offsets ? flat_offset.at(e.name) + element
                                                       : piece.local + (element - piece.begin));
            };
            if (mode == SnapshotMode::kBorrow && contiguous && !on_gpu) {
              slices_.push_back(OwnedSlice{kCheckpointGroups[g], e.name, e.placement.full_shape, full,
                                           source[g]->data<float>() + at(first)});
              continue;
            }
            float* dst = buffer(index++, static_cast<size_t>(in.numel()), on_gpu);
            for (int64_t r = 0; r < (contiguous ? 1 : rows); ++r)
              copy_to_host(*source[g], at(first + r * cols), contiguous ? in.numel() : width, dst + r * width);
            slices_.push_back(OwnedSlice{kCheckpointGroups[g], e.name, e.placement.full_shape, full, dst});
          }
        }
      }
    }
  }
  if (mode == SnapshotMode::kBorrow) held_.insert(held_.end(), {*source[0], *source[1], *source[2]});
#if NANODIST_WITH_CUDA
  if (on_gpu) CUDA_CHECK(cudaStreamSynchronize(compute_stream(model.device().index)));
#endif
}

void ModelSnapshot::take(const nn::GPT& model, const dist::TensorParallel& tp, const AdamW* optimizer, int dp_rank,
                         int dp_size, SnapshotMode mode) {
  slices_.clear();
  held_.clear();
  if (optimizer != nullptr && optimizer->sharded()) return take_sharded(model, tp, *optimizer, mode);
  const bool on_gpu = model.device().is_cuda();
  size_t index = 0;
  for (const Entry& e : entries_of(model, tp, optimizer, dp_rank, dp_size, /*writing=*/true)) {
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
      if (mode == SnapshotMode::kBorrow && rows && src->device().is_cpu()) {
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

void load_model_slices(CheckpointReader& reader, nn::GPT& model, const dist::TensorParallel& tp, AdamW* optimizer) {
  const auto names = model.named_parameters();
  const size_t stored = reader.names(kCheckpointGroups[0]).size();
  // A pipeline stage holds some of them (each one checked below).
  const bool whole_model = model.is_first_stage() && model.is_last_stage();
  ND_CHECK_INPUT(!whole_model || stored == names.size(),
                 reader.path() << " holds " << stored << " parameters, the model has " << names.size());
  // Each tensor to fill: the parameter (its data, and its master) and the moments; under ZeRO the
  // parameters here and the masters and moments below.
  const AdamW* whole = optimizer != nullptr && !optimizer->sharded() ? optimizer : nullptr;
  for (const Entry& e : entries_of(model, tp, whole, 0, 1)) {
    const std::string what = "/" + e.group + "/" + e.name;
    ND_CHECK_INPUT(reader.has(e.group, e.name), reader.path() << " has no " << what);
    const std::vector<int64_t> stored_shape = reader.full_shape(e.group, e.name);
    ND_CHECK_INPUT(stored_shape == e.placement.full_shape, reader.path() << ": " << what << " has shape "
                                                                         << shape_str(stored_shape) << ", the model has "
                                                                         << shape_str(e.placement.full_shape));
    Tensor host = read_local(reader, e.group, e.name, e.placement);
    Tensor dst = e.tensor;
    dst.copy_from(dst.dtype() == DType::F32 ? host : host.to(dst.dtype()));
    // A bf16 parameter with an f32 master: the parameter gets the master's rounded value.
    if (e.group == kCheckpointGroups[0] && whole != nullptr) {
      for (const auto& [name, param] : names) {
        Tensor data = param.data();
        if (name == e.name && !data.shares_storage(dst))
          data.copy_from(data.dtype() == DType::F32 ? host : host.to(data.dtype()));
      }
    }
  }
  if (optimizer == nullptr || whole != nullptr) return;
  for (const Entry& e : entries_of(model, tp, nullptr, 0, 1))
    for (int g = 0; g < 3; ++g) {
      ND_CHECK_INPUT(reader.has(kCheckpointGroups[g], e.name), reader.path() << " has no /" << kCheckpointGroups[g]
                                                                               << "/" << e.name);
      optimizer->load_owned(e.name, g, read_local(reader, kCheckpointGroups[g], e.name, e.placement));
    }
}

}  // namespace nd::train
