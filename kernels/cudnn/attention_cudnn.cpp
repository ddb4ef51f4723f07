// cuDNN fused attention through the cudnn-frontend graph API: one sdpa graph for the forward (with
// the log-sum-exp statistics for training) and one sdpa_backward graph, built once per shape and
// device, then executed on the caller's stream with workspace from our caching allocator (so a
// training step allocates nothing new and can be captured into a CUDA graph).
#include "kernels/cudnn/attention_cudnn.h"

#include <cudnn.h>
#include <cudnn_frontend.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "kernels/cuda/add.h"
#include "kernels/cudnn/attention_cudnn_rng.h"
#include "tensor/cuda_check.h"
#include "tensor/cuda_stream.h"
#include "tensor/device.h"
#include "tensor/storage.h"

namespace nd::cudnn {

namespace fe = cudnn_frontend;

#define CUDNN_CHECK(call)                                                                                 \
  do {                                                                                                    \
    cudnnStatus_t nd_st_ = (call);                                                                        \
    if (nd_st_ != CUDNN_STATUS_SUCCESS)                                                                   \
      ::nd::throw_error(#call, __FILE__, __LINE__, std::string("cuDNN error: ") + cudnnGetErrorString(nd_st_)); \
  } while (0)

namespace {

// The tensors of both graphs, by uid in the variant pack.
enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV, kSeed, kOffset };

struct Shape {
  int64_t B, T, NH, hs;
  bool f16 = false;  // the 16-bit type of q, k, v, o and their gradients: f16, else bf16
  int64_t C() const { return NH * hs; }
  // q, k, v (and dq, dk, dv) as (B, NH, T, hs) views of the packed (B, T, 3C) buffer.
  std::vector<int64_t> dims() const { return {B, NH, T, hs}; }
  std::vector<int64_t> qkv_strides() const { return {T * 3 * C(), hs, 3 * C(), 1}; }
  // out and dout (B, T, C) as (B, NH, T, hs).
  std::vector<int64_t> out_strides() const { return {T * C(), hs, C(), 1}; }
};

struct Plan {
  std::shared_ptr<fe::graph::Graph> graph;
  int64_t workspace_bytes = 0;
};

// What a built graph depends on: device, direction, shape, the dropout probability (its bits) and
// the 16-bit type (f16 or bf16).
using PlanKey = std::tuple<int, bool, int64_t, int64_t, int64_t, int64_t, uint32_t, bool>;

std::mutex g_mutex;
auto* g_handles = new std::vector<cudnnHandle_t>();  // per device, kept for the process
auto* g_plans = new std::map<PlanKey, Plan>();

cudnnHandle_t handle_of(int device) {
  if (static_cast<int>(g_handles->size()) <= device) g_handles->resize(device + 1, nullptr);
  cudnnHandle_t& h = (*g_handles)[device];
  if (!h) CUDNN_CHECK(cudnnCreate(&h));
  return h;
}

void check_frontend(fe::error_t status, const char* step, const Shape& s) {
  ND_CHECK(status.is_good(), "cuDNN attention (B=" << s.B << " T=" << s.T << " heads=" << s.NH << " hs=" << s.hs
                                                   << "): " << step << " failed: " << status.get_message());
}

std::shared_ptr<fe::graph::Graph> new_graph(const Shape& s) {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(s.f16 ? fe::DataType_t::HALF : fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return g;
}

std::shared_ptr<fe::graph::Tensor_attributes> input(fe::graph::Graph& g, const char* name, Uid uid,
                                                    std::vector<int64_t> dims, std::vector<int64_t> strides) {
  return g.tensor(fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(dims).set_stride(strides));
}

// The dropout seed and offset: one int64 each in device memory.
std::pair<std::shared_ptr<fe::graph::Tensor_attributes>, std::shared_ptr<fe::graph::Tensor_attributes>> rng_inputs(
    fe::graph::Graph& g) {
  auto scalar = [&](const char* name, Uid uid) {
    return g.tensor(fe::graph::Tensor_attributes()
                        .set_name(name)
                        .set_uid(uid)
                        .set_dim({1, 1, 1, 1})
                        .set_stride({1, 1, 1, 1})
                        .set_data_type(fe::DataType_t::INT64));
  };
  return {scalar("seed", kSeed), scalar("offset", kOffset)};
}

void build(Plan& plan, cudnnHandle_t handle, const Shape& s) {
  fe::graph::Graph& g = *plan.graph;
  check_frontend(g.validate(), "validate", s);
  check_frontend(g.build_operation_graph(handle), "build_operation_graph", s);
  check_frontend(g.create_execution_plans({fe::HeurMode_t::A}), "create_execution_plans", s);
  check_frontend(g.check_support(handle), "check_support", s);
  check_frontend(g.build_plans(handle), "build_plans", s);
  check_frontend(g.get_workspace_size(plan.workspace_bytes), "get_workspace_size", s);
}

Plan forward_plan(cudnnHandle_t handle, const Shape& s, float p) {
  Plan plan{new_graph(s), 0};
  fe::graph::Graph& g = *plan.graph;
  auto q = input(g, "q", kQ, s.dims(), s.qkv_strides());
  auto k = input(g, "k", kK, s.dims(), s.qkv_strides());
  auto v = input(g, "v", kV, s.dims(), s.qkv_strides());
  auto attrs = fe::graph::SDPA_attributes()
                   .set_name("attention_forward")
                   .set_generate_stats(true)
                   .set_causal_mask(true)
                   .set_attn_scale(1.0f / std::sqrt(static_cast<float>(s.hs)));
  if (p > 0.0f) {
    auto [seed, offset] = rng_inputs(g);
    attrs.set_dropout(p, seed, offset);
  }
  auto [o, stats] = g.sdpa(q, k, v, attrs);
  o->set_output(true).set_uid(kO).set_dim(s.dims()).set_stride(s.out_strides());
  // (B, NH, T, 1) f32: our lse (B, NH, T).
  stats->set_output(true).set_uid(kStats).set_data_type(fe::DataType_t::FLOAT)
      .set_dim({s.B, s.NH, s.T, 1}).set_stride({s.NH * s.T, s.T, 1, 1});
  build(plan, handle, s);
  return plan;
}

Plan backward_plan(cudnnHandle_t handle, const Shape& s, float p, bool deterministic) {
  Plan plan{new_graph(s), 0};
  fe::graph::Graph& g = *plan.graph;
  auto q = input(g, "q", kQ, s.dims(), s.qkv_strides());
  auto k = input(g, "k", kK, s.dims(), s.qkv_strides());
  auto v = input(g, "v", kV, s.dims(), s.qkv_strides());
  auto o = input(g, "o", kO, s.dims(), s.out_strides());
  auto dout = input(g, "dout", kDO, s.dims(), s.out_strides());
  auto stats = g.tensor(fe::graph::Tensor_attributes()
                            .set_name("stats")
                            .set_uid(kStats)
                            .set_dim({s.B, s.NH, s.T, 1})
                            .set_stride({s.NH * s.T, s.T, 1, 1})
                            .set_data_type(fe::DataType_t::FLOAT));
  auto attrs = fe::graph::SDPA_backward_attributes()
                   .set_name("attention_backward")
                   .set_causal_mask(true)
                   .set_attn_scale(1.0f / std::sqrt(static_cast<float>(s.hs)))
                   .set_deterministic_algorithm(deterministic);
  if (p > 0.0f) {
    auto [seed, offset] = rng_inputs(g);
    attrs.set_dropout(p, seed, offset);
  }
  auto [dq, dk, dv] = g.sdpa_backward(q, k, v, o, dout, stats, attrs);
  dq->set_output(true).set_uid(kDQ).set_dim(s.dims()).set_stride(s.qkv_strides());
  dk->set_output(true).set_uid(kDK).set_dim(s.dims()).set_stride(s.qkv_strides());
  dv->set_output(true).set_uid(kDV).set_dim(s.dims()).set_stride(s.qkv_strides());
  build(plan, handle, s);
  return plan;
}

const Plan& plan_for(int device, cudnnHandle_t handle, bool backward, const Shape& s, float p) {
  uint32_t p_bits = 0;
  std::memcpy(&p_bits, &p, sizeof(p));
  PlanKey key{device, backward, s.B, s.T, s.NH, s.hs, p_bits, s.f16};
  auto it = g_plans->find(key);
  if (it != g_plans->end()) return it->second;
  if (!backward) return g_plans->emplace(key, forward_plan(handle, s, p)).first->second;
  // Deterministic where this cuDNN has it for the shape, as our kernel's backward (dq summed in a
  // fixed order, not by atomics); else cuDNN's default backward.
  try {
    return g_plans->emplace(key, backward_plan(handle, s, p, true)).first->second;
  } catch (const Error&) {
    return g_plans->emplace(key, backward_plan(handle, s, p, false)).first->second;
  }
}

Shape check_shape(const char* what, int64_t B, int64_t T_len, int64_t C, int64_t NH) {
  ND_CHECK(B > 0 && T_len > 0 && C > 0 && NH > 0 && C % NH == 0,
           what << ": bad shape B=" << B << " T=" << T_len << " C=" << C << " NH=" << NH);
  const int64_t hs = C / NH;
  ND_CHECK(hs % 8 == 0, what << ": head size " << hs << " (C=" << C << ", NH=" << NH
                             << ") is not supported by cuDNN attention: it must be a multiple of 8");
  return {B, T_len, NH, hs};
}

void check_aligned(const char* what, const void* p) {
  ND_CHECK(reinterpret_cast<uintptr_t>(p) % 16 == 0, what << ": cuDNN attention needs 16-byte aligned buffers");
}

// cuDNN's Philox key for a call: ours (seed, stream) and, under tensor parallelism, the first head
// of this rank, so that the ranks' heads draw different masks. splitmix64 mixes the three.
int64_t philox_key(const AttentionDropout& d) {
  auto mix = [](uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
  };
  return static_cast<int64_t>(mix(d.seed ^ mix(d.stream ^ mix(static_cast<uint64_t>(d.first_head)))));
}

// Runs `plan` with `pack` on `stream`: the dropout seed and offset and the workspace come from our
// allocator and go back to it afterwards, reused only by later work on the stream.
void execute(const Plan& plan, cudnnHandle_t handle, int device, std::unordered_map<int64_t, void*>& pack,
             const AttentionDropout& dropout, cudaStream_t stream, const Shape& s) {
  CUDNN_CHECK(cudnnSetStream(handle, stream));
  int64_t* rng = nullptr;
  if (dropout.active()) {
    rng = static_cast<int64_t*>(device_alloc(2 * sizeof(int64_t), device));
    write_philox_seed_offset(rng, philox_key(dropout), dropout.offset, static_cast<int64_t>(dropout.first), stream);
    pack[kSeed] = rng;
    pack[kOffset] = rng + 1;
  }
  void* workspace = plan.workspace_bytes > 0 ? device_alloc(static_cast<size_t>(plan.workspace_bytes), device) : nullptr;
  check_frontend(plan.graph->execute(handle, pack, workspace), "execute", s);
  if (workspace) device_free(workspace, device);
  if (rng) device_free(rng, device);
}

}  // namespace

bool attention_available(std::string* why) {
  if (!cuda_available()) {
    if (why) *why = "cuDNN attention needs a CUDA GPU, and this machine has none";
    return false;
  }
  // Asked on every attention call: the answer is worked out once per device.
  static std::mutex mutex;
  static std::map<int, std::string> reasons;  // device -> why not, "" = available
  const int device = current_cuda_device();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = reasons.find(device);
  if (it == reasons.end()) {
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    std::string reason;
    if (prop.major < 8)
      reason = "cuDNN attention needs a GPU of compute capability 8.0 or newer; " + std::string(prop.name) + " has " +
               std::to_string(prop.major) + "." + std::to_string(prop.minor);
    else if (cudnnGetVersion() < 90000)
      reason = "cuDNN attention needs libcudnn 9 or newer; this process loaded " + std::to_string(cudnnGetVersion());
    it = reasons.emplace(device, reason).first;
  }
  if (why) *why = it->second;
  return it->second.empty();
}

namespace {

// The launchers for T = bf16 or f16 (the graph's io type follows T).
template <typename T>
void forward(const T* qkv, T* out, float* lse, int64_t B, int64_t T_len, int64_t C, int64_t NH,
             const AttentionDropout& dropout, cudaStream_t stream) {
  if (B * T_len == 0) return;
  Shape s = check_shape("attention_forward (cuDNN)", B, T_len, C, NH);
  s.f16 = std::is_same<T, f16>::value;
  ND_CHECK(qkv && out && lse, "attention_forward (cuDNN): null pointer");
  ND_CHECK(dropout.p >= 0.0f && dropout.p < 1.0f, "attention_forward (cuDNN): dropout p = " << dropout.p
                                                                                             << " is outside [0, 1)");
  check_aligned("attention_forward", qkv);
  check_aligned("attention_forward", out);
  stream = stream ? stream : compute_stream();
  const int device = current_cuda_device();
  std::lock_guard<std::mutex> lock(g_mutex);
  cudnnHandle_t handle = handle_of(device);
  const Plan& plan = plan_for(device, handle, false, s, dropout.active() ? dropout.p : 0.0f);
  T* x = const_cast<T*>(qkv);
  std::unordered_map<int64_t, void*> pack = {{kQ, x}, {kK, x + C}, {kV, x + 2 * C}, {kO, out}, {kStats, lse}};
  execute(plan, handle, device, pack, dropout, stream, s);
}

template <typename T>
void backward(const T* dout, const T* qkv, const T* out, const float* lse, GradDest<T> dqkv, int64_t B, int64_t T_len,
              int64_t C, int64_t NH, const AttentionDropout& dropout, cudaStream_t stream) {
  if (B * T_len == 0 || dqkv.ptr == nullptr) return;
  Shape s = check_shape("attention_backward (cuDNN)", B, T_len, C, NH);
  s.f16 = std::is_same<T, f16>::value;
  ND_CHECK(dout && qkv && out && lse, "attention_backward (cuDNN): null pointer");
  ND_CHECK(dropout.p >= 0.0f && dropout.p < 1.0f, "attention_backward (cuDNN): dropout p = " << dropout.p
                                                                                              << " is outside [0, 1)");
  for (const void* p : {static_cast<const void*>(dout), static_cast<const void*>(qkv),
                        static_cast<const void*>(out), static_cast<const void*>(dqkv.ptr)})
    check_aligned("attention_backward", p);
  stream = stream ? stream : compute_stream();
  const int device = current_cuda_device();
  const int64_t n = B * T_len * 3 * C;
  // cuDNN overwrites dq, dk, dv: a later contribution goes through a scratch buffer and an add.
  T* dest = dqkv.accumulate ? static_cast<T*>(device_alloc(n * sizeof(T), device)) : dqkv.ptr;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    cudnnHandle_t handle = handle_of(device);
    const Plan& plan = plan_for(device, handle, true, s, dropout.active() ? dropout.p : 0.0f);
    T* x = const_cast<T*>(qkv);
    std::unordered_map<int64_t, void*> pack = {
        {kQ, x},     {kK, x + C},     {kV, x + 2 * C},         {kO, const_cast<T*>(out)},
        {kDO, const_cast<T*>(dout)}, {kStats, const_cast<float*>(lse)}, {kDQ, dest}, {kDK, dest + C},
        {kDV, dest + 2 * C}};
    execute(plan, handle, device, pack, dropout, stream, s);
  }
  if (dqkv.accumulate) {
    cuda::add_forward(dqkv.ptr, dest, dqkv.ptr, n, stream);
    device_free(dest, device);
  }
}

}  // namespace

void attention_forward(const bf16* qkv, bf16* out, float* lse, int64_t B, int64_t T_len, int64_t C, int64_t NH,
                       const AttentionDropout& dropout, cudaStream_t stream) {
  forward(qkv, out, lse, B, T_len, C, NH, dropout, stream);
}
void attention_forward(const f16* qkv, f16* out, float* lse, int64_t B, int64_t T_len, int64_t C, int64_t NH,
                       const AttentionDropout& dropout, cudaStream_t stream) {
  forward(qkv, out, lse, B, T_len, C, NH, dropout, stream);
}

void attention_backward(const bf16* dout, const bf16* qkv, const bf16* out, const float* lse, GradDest<bf16> dqkv,
                        int64_t B, int64_t T_len, int64_t C, int64_t NH, const AttentionDropout& dropout,
                        cudaStream_t stream) {
  backward(dout, qkv, out, lse, dqkv, B, T_len, C, NH, dropout, stream);
}
void attention_backward(const f16* dout, const f16* qkv, const f16* out, const float* lse, GradDest<f16> dqkv,
                        int64_t B, int64_t T_len, int64_t C, int64_t NH, const AttentionDropout& dropout,
                        cudaStream_t stream) {
  backward(dout, qkv, out, lse, dqkv, B, T_len, C, NH, dropout, stream);
}

}  // namespace nd::cudnn
