// ops::embedding: forward against direct indexing, float64 gradients of wte and wpe with repeated
// token ids, a deterministic scatter on a large shape, and the id / shape errors.
#include <gtest/gtest.h>

#include "autograd/op_test_util.h"
#include "autograd/ops.h"
#include "common/gradcheck.h"

namespace nd {
namespace {

using test::gradcheck;
using test::random_f64;

Tensor token_ids(const std::vector<int32_t>& ids, int64_t B, int64_t T) { return Tensor::from_vector(ids, {B, T}); }

TEST(Embedding, ForwardAddsTokenAndPositionRows) {
  const int64_t V = 7, Tmax = 4, C = 5;
  Tensor idx = token_ids({3, 0, 6, 3, 3, 1}, 2, 3);
  Tensor wte = random_f64({V, C}, 1), wpe = random_f64({Tmax, C}, 2);
  for (DType dt : {DType::F32, DType::F64}) {
    Variable out = ops::embedding(idx, Variable(wte.to(dt)), Variable(wpe.to(dt)));
    ASSERT_EQ(out.shape(), (Shape{2, 3, C}));
    std::vector<double> got = out.data().to_double_vector(), te = wte.to_double_vector(), pe = wpe.to_double_vector();
    std::vector<int32_t> ids = {3, 0, 6, 3, 3, 1};
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t t = 0; t < 3; ++t)
        for (int64_t c = 0; c < C; ++c)
          EXPECT_NEAR(got[(b * 3 + t) * C + c], te[ids[b * 3 + t] * C + c] + pe[t * C + c], 1e-6);
  }
}

TEST(Embedding, GradcheckWithRepeatedIds) {
  Tensor idx = token_ids({3, 0, 6, 3, 3, 1}, 2, 3);  // id 3 appears three times: its row accumulates
  auto f = [idx](const std::vector<Variable>& v) { return ops::embedding(idx, v[0], v[1]); };
  EXPECT_EQ(gradcheck(f, {random_f64({7, 5}, 3), random_f64({4, 5}, 4)}, {true, true}), 0);
  EXPECT_EQ(gradcheck(f, {random_f64({7, 5}, 5), random_f64({4, 5}, 6)}, {false, true}), 0);
}

TEST(Embedding, LargeBackwardIsCorrectAndBitwiseReproducible) {
  const int64_t B = 8, T = 64, C = 160, V = 50;
  std::vector<int32_t> ids(B * T);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 37 + i / 7) % V);
  Tensor idx = token_ids(ids, B, T), g = random_f64({B, T, C}, 7).to(DType::F32);
  std::vector<double> first;
  for (int run = 0; run < 2; ++run) {
    Variable wte(random_f64({V, C}, 8).to(DType::F32), true), wpe(random_f64({T, C}, 9).to(DType::F32), true);
    ops::embedding(idx, wte, wpe).backward(g);
    std::vector<double> dwte = wte.grad().to_double_vector();
    if (run == 0) {
      // Reference: the scatter written out in double.
      std::vector<double> gv = g.to_double_vector(), want(V * C, 0.0);
      for (int64_t r = 0; r < B * T; ++r)
        for (int64_t c = 0; c < C; ++c) want[ids[r] * C + c] += gv[r * C + c];
      for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(dwte[i], want[i], 1e-4) << i;
      first = dwte;
    } else {
      EXPECT_EQ(dwte, first);
    }
  }
}

TEST(Embedding, BackwardUsesTheIdsOfTheForwardEvenIfTheBufferIsRefilled) {
  Tensor idx = token_ids({0, 1, 2}, 1, 3);
  Variable wte(random_f64({4, 2}, 10), true), wpe(random_f64({3, 2}, 11), true);
  Variable out = ops::embedding(idx, wte, wpe);
  idx.fill_(3.0);  // the next batch lands in the same buffer before backward
  out.backward(Tensor::ones({1, 3, 2}, DType::F64));
  // Rows 0-2 (the ids of the forward) get the gradient, row 3 (the refilled id) nothing. (Built
  // in a loop: g++ 12 with AVX-512 miscompiles the literal {1, 1, 1, 1, 1, 1, 0, 0}.)
  std::vector<double> want(8, 0.0);
  for (int i = 0; i < 6; ++i) want[i] = 1.0;
  EXPECT_EQ(wte.grad().to_double_vector(), want);
}

TEST(Embedding, OutOfRangeIdsNameTheIdAndVocabulary) {
  Variable wte(Tensor::zeros({7, 5})), wpe(Tensor::zeros({4, 5}));
  test::expect_error_mentioning([&] { ops::embedding(token_ids({1, 7, 2}, 1, 3), wte, wpe); }, {"7", "size 7"});
  test::expect_error_mentioning([&] { ops::embedding(token_ids({1, -2, 2}, 1, 3), wte, wpe); }, {"-2", "size 7"});
}

TEST(Embedding, BadShapesAndTypesNameTheShapes) {
  Variable wte(Tensor::zeros({7, 5})), wpe(Tensor::zeros({4, 5}));
  test::expect_error_mentioning(
      [&] {
        ops::embedding(token_ids({0, 1, 2, 3, 4}, 1, 5), wte, wpe);
      },
      {"[1, 5]", "[4, 5]"});
  test::expect_error_mentioning(
      [&] {
        ops::embedding(token_ids({0, 1}, 1, 2), wte, Variable(Tensor::zeros({4, 6})));
      },
      {"[7, 5]", "[4, 6]"});
  test::expect_error_mentioning([&] { ops::embedding(Tensor::zeros({1, 2}), wte, wpe); }, {"i32", "f32[1, 2]"});
  test::expect_error_mentioning(
      [&] {
        ops::embedding(Tensor::from_vector(std::vector<int32_t>{0, 1}, {2}), wte, wpe);
      },
      {"[2]"});
}

}  // namespace
}  // namespace nd
