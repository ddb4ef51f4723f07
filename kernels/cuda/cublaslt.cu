// cuBLASLt wrapper: per device a handle and workspace created on first use and kept for the
// process; per problem key the descriptors and the heuristic's best algorithm, cached.
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

// What decides the algorithm: types, transposes, sizes, leading dimensions, epilogue, beta, alignment.
using PlanKey = std::tuple<int, int, int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, bool, int>;

struct Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo;
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

// The largest power of two (<= 256) that divides the address: cuBLASLt picks kernels by it.
int alignment_of(const void* p) {
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  int align = 256;
  while (align > 1 && (a % align) != 0) align /= 2;
  return align;
}

cudaDataType_t cuda_type(DType t) {
  ND_CHECK(t == DType::F32 || t == DType::BF16, "gemm: dtype " << dtype_name(t) << " is not supported on CUDA");
  return t == DType::F32 ? CUDA_R_32F : CUDA_R_16BF;
}

Plan make_plan(const GemmProblem& p, cublasLtHandle_t handle, int align_a, int align_b, int align_d) {
  Plan plan;
  cudaDataType_t type = cuda_type(p.dtype);
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t ta = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  if (p.bias) {
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    cudaDataType_t bias_type = type;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                sizeof(bias_type)));
  }
  // Stored shapes: A is (m, k) or its transpose (k, m); likewise B.
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.a, type, p.trans_a ? p.k : p.m, p.trans_a ? p.m : p.k, p.lda));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.b, type, p.trans_b ? p.n : p.k, p.trans_b ? p.k : p.n, p.ldb));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.d, type, p.m, p.n, p.ldd));

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
  CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(handle, plan.op, plan.a, plan.b, plan.d, plan.d, pref, 1, &result,
                                              &found));
  cublasLtMatmulPreferenceDestroy(pref);
  ND_CHECK(found > 0, "gemm: cuBLASLt has no algorithm for m=" << p.m << " n=" << p.n << " k=" << p.k << " "
                                                                << dtype_name(p.dtype));
  plan.algo = result.algo;
  return plan;
}

}  // namespace

void gemm(const GemmProblem& p, cudaStream_t stream) {
  ND_CHECK(p.m >= 0 && p.n >= 0 && p.k >= 0, "gemm: negative size m=" << p.m << " n=" << p.n << " k=" << p.k);
  if (p.m == 0 || p.n == 0) return;
  ND_CHECK(p.k > 0, "gemm: inner dimension k = 0 (m=" << p.m << " n=" << p.n << ")");
  ND_CHECK(p.A && p.B && p.D, "gemm: null matrix pointer");
  ND_CHECK(p.lda >= (p.trans_a ? p.k : p.m) && p.ldb >= (p.trans_b ? p.n : p.k) && p.ldd >= p.m,
           "gemm: leading dimensions lda=" << p.lda << " ldb=" << p.ldb << " ldd=" << p.ldd << " too small");
  stream = stream_or_default(stream);
  int device = current_cuda_device();
  int align_a = alignment_of(p.A), align_b = alignment_of(p.B), align_d = alignment_of(p.D);
  PlanKey key{static_cast<int>(p.dtype), p.trans_a, p.trans_b, p.m, p.n, p.k, p.lda, p.ldb, p.ldd, p.bias != nullptr,
              p.beta != 0.0f, align_a | (align_b << 9) | (align_d << 18)};
  std::lock_guard<std::mutex> lock(g_mutex);
  DeviceBlas& blas = blas_of(device);
  auto it = g_plans->find({device, key});
  if (it == g_plans->end())
    it = g_plans->emplace(std::make_pair(device, key), make_plan(p, blas.handle, align_a, align_b, align_d)).first;
  Plan& plan = it->second;
  if (p.bias) {
    const void* bias = p.bias;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  }
  float alpha = 1.0f, beta = p.beta;
  CUBLAS_CHECK(cublasLtMatmul(blas.handle, plan.op, &alpha, p.A, plan.a, p.B, plan.b, &beta, p.D, plan.d, p.D,
                              plan.d, &plan.algo, blas.workspace, kWorkspaceBytes, stream));
}

}  // namespace nd::cuda
