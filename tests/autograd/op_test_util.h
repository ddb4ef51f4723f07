// Helpers shared by the op tests: asserting that a call throws nd::Error whose message names
// given strings (the shapes), and a directional finite-difference check that scales to shapes
// too large for the per-element gradcheck (it exercises the multi-threaded kernel paths).
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "autograd/variable.h"
#include "common/gradcheck.h"

namespace nd::test {

inline void expect_error_mentioning(const std::function<void()>& call, std::initializer_list<std::string> parts) {
  try {
    call();
    ADD_FAILURE() << "expected nd::Error";
  } catch (const Error& e) {
    for (const std::string& part : parts)
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << "'" << part << "' missing from: " << e.what();
  }
}

// For loss(x) = sum(f(x) * R): compares <grad_i, v_i> from one backward pass with the central
// difference of loss along random directions v_i (all differentiable inputs moved together).
// Returns |numeric - analytic| / (1 + |numeric|).
inline double directional_error(const VariableFn& f, const std::vector<Tensor>& inputs,
                                const std::vector<bool>& differentiable, uint64_t seed = 99, double eps = 1e-5) {
  std::vector<Variable> vars;
  for (size_t i = 0; i < inputs.size(); ++i) vars.emplace_back(inputs[i].clone(), differentiable[i]);
  Variable out = f(vars);
  Generator gen(seed);
  Tensor r = Tensor::randn(out.shape(), gen, 0.0, 1.0, DType::F64);
  out.backward(r);

  std::vector<Tensor> directions(inputs.size());
  double analytic = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!differentiable[i]) continue;
    directions[i] = Tensor::randn(inputs[i].shape(), gen, 0.0, 1.0, DType::F64);
    analytic += projected(vars[i].grad(), directions[i]);
  }
  auto loss_at = [&](double step) {
    std::vector<Variable> args;
    for (size_t i = 0; i < inputs.size(); ++i) {
      Tensor moved = inputs[i].clone();
      if (differentiable[i]) {
        double* m = moved.data<double>();
        const double* d = directions[i].data<double>();
        for (int64_t j = 0; j < moved.numel(); ++j) m[j] += step * d[j];
      }
      args.emplace_back(moved, false);
    }
    NoGradGuard no_grad;
    return projected(f(args).data(), r);
  };
  double numeric = (loss_at(eps) - loss_at(-eps)) / (2 * eps);
  return std::abs(numeric - analytic) / (1.0 + std::abs(numeric));
}

}  // namespace nd::test
