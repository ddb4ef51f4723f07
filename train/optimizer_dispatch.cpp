// Device dispatch of the optimizer kernels: the CPU loops here, the GPU in optimizer_cuda.cpp. On the
// CPU, f32 parameters, or f16 ones (the emulated fp16 path): their update runs in f32 on the masters
// (or, without masters, on a widened copy) and is rounded into the parameters, as the GPU's kernel
// does; f16 gradients (--grad-dtype f16) are widened first.
#include "train/optimizer_dispatch.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "kernels/cpu/adamw.h"
#include "kernels/cpu/global_norm.h"
#include "train/ckpt/checksummed_adamw.h"
#include "train/ckpt/copy_on_write.h"

namespace nd::train {
namespace {

// Elements of one slot of the CPU update under a checkpoint write: one chunk of the save.
constexpr int64_t kUpdateSlot = CopyOnWrite::kChunkFloats;

// The gradients as f32: the buffer itself, or a widened copy of f16 ones (kept in `wide`).
const float* f32_grads(const Tensor& grads, std::vector<float>& wide) {
  if (grads.dtype() == DType::F32) return grads.data<float>();
  check_dtype(grads, DType::F16, "gradients on the CPU (f32 or f16)");
  const f16* g = grads.data<f16>();
  wide.resize(static_cast<size_t>(grads.numel()));
  for (size_t i = 0; i < wide.size(); ++i) wide[i] = f16_to_f32(g[i]);
  return wide.data();
}

// The slots of an update while a save is in flight: first those the writer has written (nothing
// to copy), then the others from the writer's far end, so that it gains the time of the first
// part and the two meet late: the update copies only what the disk has not taken by then.
std::vector<std::pair<const FlatRun*, int64_t>> slots_for_saving(CopyOnWrite& cow, const std::vector<FlatRun>& runs,
                                                               const float* params, const float* m, const float* v) {
  std::vector<std::pair<const FlatRun*, int64_t>> written;
  std::vector<std::pair<int64_t, std::pair<const FlatRun*, int64_t>>> waiting;  // (writer position, slot)
  for (const FlatRun& r : runs)
    for (int64_t at = 0; at < r.length; at += kUpdateSlot) {
      const int64_t n = std::min(kUpdateSlot, r.length - at);
      int64_t position = -1;
      for (const float* data : {params + r.param + at, m + r.local + at, v + r.local + at}) {
        const int64_t p = cow.writer_position(data, n);
        if (p >= 0 && (position < 0 || p < position)) position = p;
      }
      if (position < 0)
        written.emplace_back(&r, at);
      else
        waiting.push_back({position, {&r, at}});
    }
  std::stable_sort(waiting.begin(), waiting.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& w : waiting) written.push_back(w.second);
  return written;
}

void round_into(const float* src, f16* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

}  // namespace

bool splits_norm(const std::vector<FlatRun>& runs, dist::Comm* tp) {
  if (tp == nullptr || tp->size() == 1) return false;
  for (const FlatRun& r : runs)
    if (r.sharded) return true;
  return false;
}

double global_grad_norm(dist::FlatParams& flat, const FlatOptimizerState& state, const std::vector<FlatRun>& runs,
                        dist::Comm* tp) {
  if (flat.device().is_cuda()) return cuda_global_grad_norm(flat, state, runs, tp);
  // [0]: the sharded runs' squares (summed over the group), [1]: the replicated ones (once).
  double sums[2] = {0.0, 0.0};
  std::vector<float> wide;
  const float* grads = f32_grads(state.grads, wide);
  for (const FlatRun& r : runs)
    if (r.in_norm) sums[r.sharded ? 0 : 1] += cpu::sum_of_squares(grads + r.grad, r.length);
  if (state.shard_group != nullptr && state.shard_group->size() > 1)
    state.shard_group->host_allreduce(sums, 2, dist::HostReduce::Sum);
  if (splits_norm(runs, tp)) tp->host_allreduce(&sums[0], 1, dist::HostReduce::Sum);
  return std::sqrt(sums[0] + sums[1]);
}

double clip_and_update(dist::FlatParams& flat, FlatOptimizerState& state, const std::vector<FlatRun>& runs,
                       const AdamWHyper& h, double grad_clip, dist::Comm* tp) {
  const bool half = state.params.dtype() == DType::F16;
  if (!half) check_dtype(state.params, DType::F32, "AdamW parameters on the CPU (f32 or f16)");
  double norm = global_grad_norm(flat, state, runs, tp);
  // A NaN or inf gradient would poison every parameter and moment: the update is dropped.
  if (!std::isfinite(norm)) return norm;
  float grad_scale = static_cast<float>(clip_scale(norm, grad_clip));
  std::vector<float> wide_grads, wide_run;
  const float* grads = f32_grads(state.grads, wide_grads);
  float *m = state.m.data<float>(), *v = state.v.data<float>();
  CopyOnWrite* cow = state.copy_on_write;
  const bool saving = cow != nullptr && cow->armed();
  if (saving && !half) {
    // A checkpoint is being written from these buffers: slot by slot, each thread hands the slot's
    // params, m and v to the save (which copies what it has not written yet) and then updates it,
    // the copy's reads still in cache; the checksums of what the writer has written are taken on
    // the update's own pass. Elementwise, so the result is the same bits.
    float* params = state.params.data<float>();
    std::vector<std::pair<const FlatRun*, int64_t>> slots = slots_for_saving(*cow, runs, params, m, v);
    const int64_t count = static_cast<int64_t>(slots.size());
    const cpu::AdamWScalars<float> decayed =
        cpu::adamw_scalars<float>(h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, h.step, grad_scale);
    const cpu::AdamWScalars<float> plain = cpu::adamw_scalars<float>(h.lr, h.beta1, h.beta2, h.eps, 0.0f, h.step, grad_scale);
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t k = 0; k < count; ++k) {
      const FlatRun& r = *slots[k].first;
      const int64_t at = slots[k].second, n = std::min(kUpdateSlot, r.length - at);
      float* const arrays[3] = {params + r.param + at, m + r.local + at, v + r.local + at};
      const cpu::AdamWScalars<float>& scalars = r.decay ? decayed : plain;
      if (n % 8 != 0) {  // a short tail: its checksums taken apart, as before_update does
        for (float* a : arrays) cow->before_update(a, n);
        cpu::adamw_update_span(scalars, arrays[0], grads + r.grad + at, arrays[1], arrays[2], n);
        continue;
      }
      int64_t tokens[3];
      for (int a = 0; a < 3; ++a) tokens[a] = cow->before_update_hashed_by_caller(arrays[a], n);
      if (tokens[0] < 0 && tokens[1] < 0 && tokens[2] < 0) {  // copied or hashed already: nothing to take
        cpu::adamw_update_span(scalars, arrays[0], grads + r.grad + at, arrays[1], arrays[2], n);
        continue;
      }
      uint64_t sums[3];
      adamw_update_checksummed(arrays[0], grads + r.grad + at, arrays[1], arrays[2], n, scalars, sums);
      for (int a = 0; a < 3; ++a)
        if (tokens[a] >= 0) cow->hashed_by_update(tokens[a], sums[a]);
    }
    return norm;
  }
  if (saving) {  // f16 weights: the save holds the f32 masters, m and v; each run is protected whole
    for (const FlatRun& r : runs) {
      if (state.master.defined()) cow->before_update(state.master.data<float>() + r.local, r.length);
      cow->before_update(m + r.local, r.length);
      cow->before_update(v + r.local, r.length);
    }
  }
  for (const FlatRun& r : runs) {
    // Where the run's f32 weights live: the parameters (or ZeRO 3's shard), the masters, or a
    // widened copy.
    float* weights = nullptr;
    if (!half) {
      weights = state.params.data<float>() + r.param;
    } else if (state.master.defined()) {
      weights = state.master.data<float>() + r.local;
    } else {
      const f16* p = state.params.data<f16>() + r.param;
      wide_run.resize(static_cast<size_t>(r.length));
      for (int64_t i = 0; i < r.length; ++i) wide_run[static_cast<size_t>(i)] = f16_to_f32(p[i]);
      weights = wide_run.data();
    }
    cpu::adamw_update(weights, grads + r.grad, m + r.local, v + r.local, r.length, h.lr, h.beta1, h.beta2, h.eps,
                      r.decay ? h.weight_decay : 0.0f, h.step, grad_scale);
    if (half) round_into(weights, state.params.data<f16>() + r.param, r.length);
  }
  return norm;
}

}  // namespace nd::train
