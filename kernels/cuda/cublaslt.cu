// cuBLASLt wrapper: per device a handle and workspace created on first use and kept for the
// process; per problem key the descriptors and the heuristic's best algorithm (or that it has
// none), cached.
#include <cublasLt.h>

#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cublaslt.h"

namespace nd::cuda {

namespace {

constexpr size_t kWorkspaceBytes = size_t{32} << 20;

struct DeviceBlas {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
};

// What decides the algorithm: types, transposes, sizes, leading dimensions, epilogue (with or
// without a bias vector, the aux leading dimension), beta, and the alignment of every pointer.
using PlanKey = std::tuple<int, int, int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, bool, int,
                           int64_t, int64_t>;

struct Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo;
  bool found = false;  // false: cuBLASLt offered no algorithm (try_gemm falls back)
};

std::mutex g_mutex;
auto* g_blas = new std::vector<DeviceBlas>();
auto* g_plans = new std::map<std::pair<int, PlanKey>, Plan>();

DeviceBlas& blas_of(int device) {
  if (static_cast<int>(g_blas->size()) <= device) g_blas->resize(device + 1);
  DeviceBlas& b = (*g_blas)[device];
  if (!b.handle) {
    CUBLAS_CHECK(cublasLtCreate(&b.handle));
    CUDA_CHECK(cudaMalloc(&b.workspace, kWorkspaceBytes));
  }
  return b;
}

// The largest power of two (<= 256) that divides the address: cuBLASLt picks kernels by it. A null
// pointer (no such operand) counts as 256.
int alignment_of(const void* p) {
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  int align = 256;
  while (align > 1 && (a % align) != 0) align /= 2;
  return align;
}

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::F32: return CUDA_R_32F;
    case DType::BF16: return CUDA_R_16BF;
    case DType::F16: return CUDA_R_16F;
    default: ND_FAIL("gemm: dtype " << dtype_name(t) << " is not supported on CUDA");
  }
}

cudaDataType_t fp8_cuda_type(Fp8Format f) { return f == Fp8Format::E4M3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2; }

// The FP8 inputs' dequantisation factors, per call like the epilogue's pointers.
void set_scale_pointers(cublasLtMatmulDesc_t op, const GemmProblem& p) {
  if (!p.fp8) return;
  const void* a = p.a_scale;
  const void* b = p.b_scale;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &a, sizeof(a)));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b, sizeof(b)));
}

cublasLtEpilogue_t epilogue_of(const GemmProblem& p) {
  switch (p.epilogue) {
    case GemmEpilogue::GeluAux:
      return p.bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
    case GemmEpilogue::Plain:
      break;
  }
  return p.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

// The per-call pointers of the epilogue. cuBLASLt's heuristic also reads them, for their alignment.
void set_epilogue_pointers(cublasLtMatmulDesc_t op, const GemmProblem& p) {
  if (const void* bias = p.bias)
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  if (p.epilogue != GemmEpilogue::Plain) {
    void* aux = p.aux;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux)));
  }
}

Plan make_plan(const GemmProblem& p, cublasLtHandle_t handle, int align_a, int align_b, int align_d) {
  Plan plan;
  const cudaDataType_t d_type = cuda_type(p.d_type);
  const cudaDataType_t a_type = p.fp8 ? fp8_cuda_type(p.a_format) : cuda_type(p.a_type);
  const cudaDataType_t b_type = p.fp8 ? fp8_cuda_type(p.b_format) : cuda_type(p.a_type);
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t ta = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  cublasLtEpilogue_t epilogue = epilogue_of(p);
  if (epilogue != CUBLASLT_EPILOGUE_DEFAULT)
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
  if (p.bias) {
    cudaDataType_t bias_type = d_type;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                sizeof(bias_type)));
  }
  if (p.epilogue != GemmEpilogue::Plain) {
    int64_t ldaux = p.ldaux;
    // aux keeps its default type, D's: the GELU input is stored as the unfused linear would store it.
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ldaux, sizeof(ldaux)));
  }
  if (p.fp8 && p.fast_accum) {
    const int8_t fast = 1;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast)));
  }
  set_epilogue_pointers(plan.op, p);
  set_scale_pointers(plan.op, p);
  // Stored shapes: A is (m, k) or its transpose (k, m); likewise B.
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.a, a_type, p.trans_a ? p.k : p.m, p.trans_a ? p.m : p.k, p.lda));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.b, b_type, p.trans_b ? p.n : p.k, p.trans_b ? p.k : p.n, p.ldb));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.d, d_type, p.m, p.n, p.ldd));

  cublasLtMatmulPreference_t pref;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  uint64_t ws = kWorkspaceBytes;
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  uint32_t aa = align_a, ab = align_b, ad = align_d;
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aa, sizeof(aa)));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ab, sizeof(ab)));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ad, sizeof(ad)));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ad, sizeof(ad)));
  cublasLtMatmulHeuristicResult_t result;
  int found = 0;
  cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle, plan.op, plan.a, plan.b, plan.d, plan.d, pref, 1,
                                                         &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  // An epilogue this GPU, type or layout cannot fuse is refused as "not supported" (or, for some
  // combinations, "invalid value"): for the GELU epilogues that means no algorithm, and the caller
  // falls back; a plain product must always have one.
  const bool refused = status == CUBLAS_STATUS_NOT_SUPPORTED ||
                       (status == CUBLAS_STATUS_INVALID_VALUE && p.epilogue != GemmEpilogue::Plain);
  if (!refused) CUBLAS_CHECK(status);
  plan.found = status == CUBLAS_STATUS_SUCCESS && found > 0;
  if (plan.found) plan.algo = result.algo;
  return plan;
}

void check_fp8_problem(const GemmProblem& p) {
  ND_CHECK(p.d_type == DType::BF16 || p.d_type == DType::F32,
           "gemm: FP8 inputs with a " << dtype_name(p.d_type) << " output (expected bf16 or f32)");
  ND_CHECK(p.a_scale && p.b_scale, "gemm: FP8 inputs need a_scale and b_scale (their dequantisation factors)");
  // cuBLASLt 13 offers algorithms for any scale address but refuses at launch (NOT_SUPPORTED)
  // those not 16-byte aligned: say so here instead.
  ND_CHECK(alignment_of(p.a_scale) >= 16 && alignment_of(p.b_scale) >= 16,
           "gemm: FP8 scale pointers must be 16-byte aligned, got " << p.a_scale << " and " << p.b_scale);
  ND_CHECK(!p.d_scale, "gemm: d_scale is for FP8 outputs, which are not supported");
  ND_CHECK(p.a_format == Fp8Format::E4M3 || p.b_format == Fp8Format::E4M3, "gemm: E5M2 x E5M2 has no FP8 kernel");
  ND_CHECK(p.trans_a && !p.trans_b, "gemm: FP8 needs the TN layout (trans_a set, trans_b not): transpose a copy first");
  ND_CHECK(p.lda % 16 == 0 && p.ldb % 16 == 0,
           "gemm: FP8 needs lda and ldb multiples of 16, got lda=" << p.lda << " ldb=" << p.ldb);
  ND_CHECK(p.epilogue == GemmEpilogue::Plain, "gemm: FP8 with a GELU epilogue is not supported");
}

void check_problem(const GemmProblem& p) {
  if (p.fp8) {
    check_fp8_problem(p);
  } else {
    const bool half = p.a_type == DType::BF16 || p.a_type == DType::F16;
    ND_CHECK(p.a_type == p.d_type || (half && p.d_type == DType::F32),
             "gemm: " << dtype_name(p.a_type) << " inputs with a " << dtype_name(p.d_type)
                      << " output (expected f32 -> f32, or bf16 or f16 -> itself or f32)");
    ND_CHECK(!p.a_scale && !p.b_scale && !p.d_scale, "gemm: per-tensor scales are for FP8 types only");
    ND_CHECK(!p.fast_accum, "gemm: fast accumulation is for FP8 inputs only");
  }
  ND_CHECK(p.m >= 0 && p.n >= 0 && p.k >= 0, "gemm: negative size m=" << p.m << " n=" << p.n << " k=" << p.k);
  if (p.m == 0 || p.n == 0) return;
  ND_CHECK(p.k > 0, "gemm: inner dimension k = 0 (m=" << p.m << " n=" << p.n << ")");
  ND_CHECK(p.A && p.B && p.D, "gemm: null matrix pointer");
  ND_CHECK(p.lda >= (p.trans_a ? p.k : p.m) && p.ldb >= (p.trans_b ? p.n : p.k) && p.ldd >= p.m,
           "gemm: leading dimensions lda=" << p.lda << " ldb=" << p.ldb << " ldd=" << p.ldd << " too small");
  if (p.epilogue != GemmEpilogue::Plain) {
    ND_CHECK(p.aux && p.ldaux >= p.m, "gemm: a GELU epilogue needs aux with ldaux >= m=" << p.m << ", got ldaux="
                                                                                          << p.ldaux);
    ND_CHECK(p.beta == 0.0f, "gemm: a GELU epilogue takes beta = 0, got " << p.beta);
  }
}

// Runs p; false when cuBLASLt has no algorithm for it (nothing ran).
bool run_gemm(const GemmProblem& p, cudaStream_t stream) {
  check_problem(p);
  if (p.m == 0 || p.n == 0) return true;
  if (p.epilogue != GemmEpilogue::Plain && p.ldaux % 8 != 0) return false;
  stream = stream_or_default(stream);
  int device = current_cuda_device();
  int align_a = alignment_of(p.A), align_b = alignment_of(p.B), align_d = alignment_of(p.D);
  int64_t align_epilogue = alignment_of(p.bias) | (int64_t{alignment_of(p.aux)} << 9);
  const int fp8_key =
      p.fp8 ? 1 | (static_cast<int>(p.a_format) << 1) | (static_cast<int>(p.b_format) << 2) | (int{p.fast_accum} << 3) : 0;
  PlanKey key{static_cast<int>(p.a_type) | (static_cast<int>(p.d_type) << 8) | (fp8_key << 16), p.trans_a, p.trans_b, p.m, p.n, p.k, p.lda, p.ldb, p.ldd,
              p.bias != nullptr, p.beta != 0.0f, align_a | (align_b << 9) | (align_d << 18),
              static_cast<int64_t>(p.epilogue) | (p.ldaux << 2), align_epilogue};
  std::lock_guard<std::mutex> lock(g_mutex);
  DeviceBlas& blas = blas_of(device);
  auto it = g_plans->find({device, key});
  if (it == g_plans->end())
    it = g_plans->emplace(std::make_pair(device, key), make_plan(p, blas.handle, align_a, align_b, align_d)).first;
  Plan& plan = it->second;
  if (!plan.found) return false;
  set_epilogue_pointers(plan.op, p);
  set_scale_pointers(plan.op, p);
  float alpha = 1.0f, beta = p.beta;
  CUBLAS_CHECK(cublasLtMatmul(blas.handle, plan.op, &alpha, p.A, plan.a, p.B, plan.b, &beta, p.D, plan.d, p.D,
                              plan.d, &plan.algo, blas.workspace, kWorkspaceBytes, stream));
  return true;
}

}  // namespace

void gemm(const GemmProblem& p, cudaStream_t stream) {
  ND_CHECK(run_gemm(p, stream), "gemm: cuBLASLt has no algorithm for m=" << p.m << " n=" << p.n << " k=" << p.k
                                                                          << " " << (p.fp8 ? "fp8" : dtype_name(p.a_type)) << " -> "
                                                                          << dtype_name(p.d_type));
}

bool try_gemm(const GemmProblem& p, cudaStream_t stream) { return run_gemm(p, stream); }

}  // namespace nd::cuda
