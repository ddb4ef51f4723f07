// CUDA layernorm against the CPU kernel: through ops::layernorm (output, dx, dw, db, f32 and bf16),
// and the raw backward kernel for every write/add/skip choice of dx, dw and db, odd and unaligned
// rows, fewer rows than blocks, no rows, the widest fused rows and wider, and bit-identical reruns.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "kernels/cpu/layernorm.h"
#include "kernels/cuda/layernorm.h"
#include "kernels/cuda_test_util.h"

namespace nd::test {
namespace {

void check_layernorm(DType dtype, const Shape& shape) {
  Generator gen(test_seed());
  int64_t C = shape.back();
  std::vector<Tensor> inputs = {random_input(shape, gen, dtype, 2.0), random_input({C}, gen, dtype),
                                random_input({C}, gen, dtype)};
  check_op_against_cpu([](const std::vector<Variable>& v, Device) { return ops::layernorm(v[0], v[1], v[2]); },
                       inputs, {true, true, true}, dtype, gen, "layernorm " + std::string(dtype_name(dtype)));
}

TEST(LayernormCuda, F32) {
  ND_SKIP_WITHOUT_GPU();
  check_layernorm(DType::F32, {3, 5, 64});
  check_layernorm(DType::F32, {7, 37});
  check_layernorm(DType::F32, {1100, 48});  // more than one block of rows in the dw/db sums
}

TEST(LayernormCuda, Bf16) {
  ND_SKIP_WITHOUT_GPU();
  check_layernorm(DType::BF16, {4, 9, 96});
  check_layernorm(DType::BF16, {5, 33});
}

// The raw kernels exist only in a CUDA build.
#if NANODIST_WITH_CUDA

// What one backward call asks of a gradient: nothing (null pointer), the first contribution (written
// over a buffer that starts as NaN), or a later one (added to random old values).
enum class Grad { kSkip, kWrite, kAdd };

const char* grad_name(Grad g) { return g == Grad::kSkip ? "skip" : g == Grad::kWrite ? "write" : "add"; }

struct BackwardCase {
  int64_t N, C;
  Grad dx, dw, db;
  int lead = 0;  // elements before every GPU array of x, w, dout and the gradients: 1 misaligns rows

  std::string name(DType dtype) const {
    return std::string(dtype_name(dtype)) + " N=" + std::to_string(N) + " C=" + std::to_string(C) + " dx " +
           grad_name(dx) + " dw " + grad_name(dw) + " db " + grad_name(db) + " lead " + std::to_string(lead);
  }
};

// f32 on the CPU, x, w, dout rounded to the dtype; mean and rstd from the CPU forward (both backends
// read the same statistics). x and dout hold max(N, 1) rows, so that N = 0 still has pointers.
struct BackwardInputs {
  Tensor x, w, dout, mean, rstd;
  Tensor dx0, dw0, db0;  // the old gradient values that an add starts from
};

BackwardInputs make_inputs(const BackwardCase& k, DType dtype, Generator& gen) {
  int64_t rows = std::max<int64_t>(k.N, 1);
  BackwardInputs in;
  in.x = random_input({rows, k.C}, gen, dtype, 2.0);
  in.w = random_input({k.C}, gen, dtype);
  in.dout = random_input({rows, k.C}, gen, dtype);
  in.mean = Tensor::empty({rows});
  in.rstd = Tensor::empty({rows});
  Tensor b = Tensor::zeros({k.C}), out = Tensor::empty({rows, k.C});
  cpu::layernorm_forward<float>(in.x.data<float>(), in.w.data<float>(), b.data<float>(), out.data<float>(),
                                in.mean.data<float>(), in.rstd.data<float>(), rows, k.C, 1e-5f);
  in.dx0 = random_input({rows, k.C}, gen, dtype, 0.1);
  in.dw0 = random_input({k.C}, gen, dtype, 0.1);
  in.db0 = random_input({k.C}, gen, dtype, 0.1);
  return in;
}

// dx, dw, db of the CPU backward (f32) from the old values.
std::vector<Tensor> cpu_backward(const BackwardCase& k, const BackwardInputs& in) {
  std::vector<Tensor> g = {in.dx0.clone(), in.dw0.clone(), in.db0.clone()};
  auto dest = [&](int i, Grad mode) {
    return GradDest<float>{mode == Grad::kSkip ? nullptr : g[i].data<float>(), mode == Grad::kAdd};
  };
  cpu::layernorm_backward<float>(in.dout.data<float>(), in.x.data<float>(), in.w.data<float>(), in.mean.data<float>(),
                                 in.rstd.data<float>(), dest(0, k.dx), dest(1, k.dw), dest(2, k.db), k.N, k.C);
  return g;
}

// `t` (f32, CPU) as a flat GPU buffer of `dtype` after `lead` zeros.
Tensor to_device(const Tensor& t, DType dtype, int lead) {
  std::vector<double> v = t.to_double_vector();
  std::vector<float> padded(lead, 0.0f);
  padded.insert(padded.end(), v.begin(), v.end());
  return on_gpu(Tensor::from_vector(padded, {static_cast<int64_t>(padded.size())}), dtype);
}

Tensor from_device(const Tensor& d, const Shape& shape, int lead) {
  std::vector<double> v = d.to(Device::cpu()).to_double_vector();
  return Tensor::from_vector(std::vector<float>(v.begin() + lead, v.end()), shape);
}

// dx, dw, db of the CUDA backward, on the CPU in f32.
template <typename T>
std::vector<Tensor> gpu_backward(const BackwardCase& k, const BackwardInputs& in, DType dtype) {
  int lead = k.lead;
  Tensor x = to_device(in.x, dtype, lead), w = to_device(in.w, dtype, lead), dout = to_device(in.dout, dtype, lead);
  Tensor mean = in.mean.to(Device::cuda(0)), rstd = in.rstd.to(Device::cuda(0));
  std::vector<Tensor> old = {in.dx0, in.dw0, in.db0}, g;
  std::vector<Grad> modes = {k.dx, k.dw, k.db};
  for (int i = 0; i < 3; ++i) {
    Tensor start = modes[i] == Grad::kAdd ? old[i] : Tensor::full(old[i].shape(), NAN);
    g.push_back(to_device(start, dtype, lead));
  }
  auto dest = [&](int i) {
    return GradDest<T>{modes[i] == Grad::kSkip ? nullptr : g[i].data<T>() + lead, modes[i] == Grad::kAdd};
  };
  cuda::layernorm_backward<T>(dout.data<T>() + lead, x.data<T>() + lead, w.data<T>() + lead, mean.data<float>(),
                              rstd.data<float>(), dest(0), dest(1), dest(2), k.N, k.C);
  std::vector<Tensor> out;
  for (int i = 0; i < 3; ++i) out.push_back(from_device(g[i], old[i].shape(), lead));
  return out;
}

std::vector<Tensor> gpu_backward(const BackwardCase& k, const BackwardInputs& in, DType dtype) {
  return dtype == DType::F32 ? gpu_backward<float>(k, in, dtype) : gpu_backward<bf16>(k, in, dtype);
}

const char* const kGradNames[] = {"dx", "dw", "db"};

// Every gradient the case asks for against the CPU (dx only where there are rows).
void check_backward(DType dtype, const BackwardCase& k) {
  Generator gen(test_seed());
  BackwardInputs in = make_inputs(k, dtype, gen);
  std::vector<Tensor> ref = cpu_backward(k, in), got = gpu_backward(k, in, dtype);
  Tolerance tol = tolerance_for(dtype);
  std::vector<Grad> modes = {k.dx, k.dw, k.db};
  for (int i = 0; i < 3; ++i) {
    if (modes[i] == Grad::kSkip || (i == 0 && k.N == 0)) continue;
    expect_close(got[i], ref[i], tol.atol_rel, tol.rtol, k.name(dtype) + " " + kGradNames[i]);
  }
}

const DType kDtypes[] = {DType::F32, DType::BF16};

TEST(LayernormBackwardCuda, EveryWriteAddSkipChoice) {
  ND_SKIP_WITHOUT_GPU();
  const Grad kModes[] = {Grad::kSkip, Grad::kWrite, Grad::kAdd};
  for (DType dtype : kDtypes)
    for (int64_t C : {768, 767})  // 16-byte packs, and the scalar path
      for (Grad dx : kModes)
        for (Grad dw : kModes)
          for (Grad db : kModes) check_backward(dtype, {300, C, dx, dw, db});
}

TEST(LayernormBackwardCuda, Shapes) {
  ND_SKIP_WITHOUT_GPU();
  const std::vector<BackwardCase> shapes = {
      {1, 64, {}, {}, {}},        // one row
      {5, 768, {}, {}, {}},       // fewer rows than a block has warps
      {4133, 768, {}, {}, {}},    // many blocks, the last one short
      {33, 768, {}, {}, {}, 1},   // rows not 16-byte aligned: the scalar path
      {7, 37, {}, {}, {}},        // odd C
      {64, 36, {}, {}, {}},       // a multiple of 4 (f32 packs) but not of 8 (bf16 packs)
      {100, 100, {}, {}, {}},     // most lanes past the end of the row
      {257, 1001, {}, {}, {}},    // 32 columns per lane, one warp per row
      {50, 2304, {}, {}, {}},     // teams of 4 warps per row
      {100, 3001, {}, {}, {}},    // teams of 4 warps, scalar
      {100, 5000, {}, {}, {}},    // teams of 8 warps: one row per block at a time
      {40, 8192, {}, {}, {}},     // the widest fused row
      {6, 8200, {}, {}, {}},      // wider: the dx kernel and column sums
      {5, 8201, {}, {}, {}},      // wider, scalar
  };
  for (DType dtype : kDtypes)
    for (BackwardCase k : shapes)
      for (Grad mode : {Grad::kWrite, Grad::kAdd}) {
        k.dx = k.dw = k.db = mode;
        check_backward(dtype, k);
      }
}

TEST(LayernormBackwardCuda, NoRowsWritesZeroSums) {
  ND_SKIP_WITHOUT_GPU();
  for (DType dtype : kDtypes) {
    check_backward(dtype, {0, 768, Grad::kWrite, Grad::kWrite, Grad::kWrite});
    check_backward(dtype, {0, 37, Grad::kAdd, Grad::kAdd, Grad::kWrite});
    check_backward(dtype, {0, 64, Grad::kSkip, Grad::kWrite, Grad::kAdd});
  }
}

// Number of elements that differ in any bit (both are exact images of the dtype's values).
int64_t differing(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to_double_vector(), y = b.to_double_vector();
  int64_t n = 0;
  for (size_t i = 0; i < x.size(); ++i) n += !(x[i] == y[i]);
  return n;
}

TEST(LayernormBackwardCuda, RerunIsBitIdentical) {
  ND_SKIP_WITHOUT_GPU();
  for (DType dtype : kDtypes)
    for (int64_t C : {768, 767, 2304}) {
      BackwardCase k{4133, C, Grad::kWrite, Grad::kWrite, Grad::kWrite};
      Generator gen(test_seed());
      BackwardInputs in = make_inputs(k, dtype, gen);
      std::vector<Tensor> first = gpu_backward(k, in, dtype), second = gpu_backward(k, in, dtype);
      std::vector<Tensor> ref = cpu_backward(k, in);
      Tolerance tol = tolerance_for(dtype);
      for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(differing(first[i], second[i]), 0) << k.name(dtype) << " " << kGradNames[i];
        expect_close(first[i], ref[i], tol.atol_rel, tol.rtol, k.name(dtype) + " " + kGradNames[i]);
      }
    }
}

#endif  // NANODIST_WITH_CUDA

}  // namespace
}  // namespace nd::test
