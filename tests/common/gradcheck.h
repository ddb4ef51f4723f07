// Central-difference gradient checks in float64. A function of Variables is projected onto a
// fixed random tensor R (loss = sum(f(x) * R)), so one backward pass with gradient R gives the
// analytic gradient of every input, and two forward passes per element give the numeric one.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "autograd/variable.h"
#include "tensor/random.h"

namespace nd::test {

using VariableFn = std::function<Variable(const std::vector<Variable>&)>;

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-7;
  double rtol = 1e-5;
  uint64_t seed = 2024;
  // gradcheck_parameters probes at most this many evenly spaced elements of each parameter
  // (0 = all), so whole-model checks stay fast while still touching every parameter tensor.
  int64_t max_elements_per_parameter = 0;
};

inline double projected(const Tensor& y, const Tensor& r) {
  std::vector<double> yv = y.to_double_vector(), rv = r.to_double_vector();
  double s = 0;
  for (size_t i = 0; i < yv.size(); ++i) s += yv[i] * rv[i];
  return s;
}

// `inputs` are f64 CPU tensors; `differentiable[i]` says whether input i gets a gradient check.
// Returns the number of mismatching elements (and reports the first few through EXPECT).
inline int gradcheck(const VariableFn& f, const std::vector<Tensor>& inputs,
                     const std::vector<bool>& differentiable, const GradcheckOptions& opt = {}) {
  std::vector<Variable> vars;
  for (size_t i = 0; i < inputs.size(); ++i) vars.emplace_back(inputs[i].clone(), differentiable[i]);
  Variable out = f(vars);
  Generator gen(opt.seed);
  Tensor r = Tensor::randn(out.shape(), gen, 0.0, 1.0, DType::F64);
  out.backward(r);

  int bad = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!differentiable[i]) continue;
    std::vector<double> analytic = vars[i].grad().to_double_vector();
    Tensor probe = inputs[i].clone();
    double* p = probe.data<double>();
    for (int64_t j = 0; j < probe.numel(); ++j) {
      double saved = p[j];
      auto eval = [&](double value) {
        p[j] = value;
        std::vector<Variable> args;
        for (size_t k = 0; k < inputs.size(); ++k)
          args.emplace_back(k == i ? probe.clone() : inputs[k].clone(), false);
        NoGradGuard no_grad;
        return projected(f(args).data(), r);
      };
      double numeric = (eval(saved + opt.eps) - eval(saved - opt.eps)) / (2 * opt.eps);
      p[j] = saved;
      double diff = std::abs(numeric - analytic[j]);
      if (diff > opt.atol + opt.rtol * std::abs(numeric)) {
        if (++bad <= 5)
          ADD_FAILURE() << "input " << i << " element " << j << ": analytic " << analytic[j]
                        << ", numeric " << numeric << ", |diff| " << diff;
      }
    }
  }
  return bad;
}

// Checks d loss / d p for every element of every parameter in `params` (f64 CPU Variables that
// `loss_fn` reads): analytic by one backward pass, numeric by perturbing each element in place.
inline int gradcheck_parameters(const std::function<Variable()>& loss_fn, std::vector<Variable> params,
                                const GradcheckOptions& opt = {}) {
  for (Variable& p : params) p.clear_grad();
  loss_fn().backward();
  int bad = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    std::vector<double> analytic = params[i].grad().to_double_vector();
    double* x = params[i].data().data<double>();
    const int64_t n = params[i].data().numel();
    const int64_t stride =
        opt.max_elements_per_parameter > 0 ? std::max<int64_t>(1, n / opt.max_elements_per_parameter) : 1;
    for (int64_t j = 0; j < n; j += stride) {
      double saved = x[j];
      auto eval = [&](double value) {
        x[j] = value;
        NoGradGuard no_grad;
        return loss_fn().data().item();
      };
      double numeric = (eval(saved + opt.eps) - eval(saved - opt.eps)) / (2 * opt.eps);
      x[j] = saved;
      double diff = std::abs(numeric - analytic[j]);
      if (diff > opt.atol + opt.rtol * std::abs(numeric) && ++bad <= 5)
        ADD_FAILURE() << "parameter " << i << " element " << j << ": analytic " << analytic[j]
                      << ", numeric " << numeric << ", |diff| " << diff;
    }
  }
  return bad;
}

// Random f64 inputs for gradient checks; `scale` keeps values away from kinks where needed.
inline Tensor random_f64(const Shape& shape, uint64_t seed, double scale = 1.0) {
  Generator gen(seed);
  return Tensor::randn(shape, gen, 0.0, scale, DType::F64);
}

}  // namespace nd::test
