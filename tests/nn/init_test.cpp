// Shard-local initialisation (nn/init.h) on the CPU: a rank's draw equals the matching slice of
// the full draw exactly (rows, columns, c_attn's q, k, v split by head, padded embedding rows), the
// generator advances by the full count on every rank, and a GPT's weights are exactly the full
// draws Tensor::randn makes, in the model's order.
#include <gtest/gtest.h>

#include <map>

#include "autograd/op_test_util.h"
#include "nn/gpt.h"
#include "nn/init.h"
#include "tensor/philox.h"

namespace nd::nn {
namespace {


std::vector<double> values(const Tensor& t) { return t.to_double_vector(); }

TEST(Init, NormalShardIsTheSliceOfTheFullDraw) {
  for (DType dtype : {DType::F32, DType::F64}) {
    for (ShardSpec spec : {ShardSpec{0, 1}, ShardSpec{0, 3}, ShardSpec{1, 1}, ShardSpec{2, 1}, ShardSpec{}}) {
      for (int tp = 1; tp <= 4; ++tp) {
        const Shape full_shape{6 * tp, 5 * tp, 3 * tp};
        Generator reference(11);
        reference.advance(1000);  // a draw that is not the generator's first
        const Tensor full = Tensor::randn(full_shape, reference, 0.5, 2.0, dtype);
        for (int r = 0; r < tp; ++r) {
          Generator gen(11);
          gen.advance(1000);
          const Tensor shard = normal_shard(full_shape, 0.5, 2.0, gen, Placement{Device::cpu(), dtype}, spec, r, tp);
          const std::string what = std::string(dtype_name(dtype)) + " dim " + std::to_string(spec.dim) + " parts " +
                                   std::to_string(spec.parts) + " rank " + std::to_string(r) + " of " +
                                   std::to_string(tp);
          ASSERT_EQ(shard.shape(), nn::shard_shape(full_shape, spec, tp)) << what;
          EXPECT_EQ(values(shard), values(nn::shard_of(full, spec, r, tp))) << what;
          EXPECT_EQ(gen.offset(), reference.offset()) << what << ": every rank advances by the full count";
        }
      }
    }
  }
}

TEST(Init, EachElementIsPhiloxNormalOfItsFullCounter) {
  // Runs of 300 (longer than a batch, not a multiple of it), counters crossing 2^32, stream 3.
  Generator gen(99, 3);
  gen.set_offset((uint64_t{1} << 32) - 1000);
  const ElementSlice slice{5, 2000, 3, 600, 300, 17};
  const PhiloxCounters counters = gen.reserve(10000);
  Tensor out = Tensor::empty({slice.size()});
  normal_fill(out, slice, counters, -1.0, 0.5);
  const std::vector<double> got = values(out);
  for (int64_t j = 0; j < slice.size(); ++j) {
    const uint64_t counter = counters.first + static_cast<uint64_t>(slice.full_index(j));
    const float expected = static_cast<float>(-1.0 + 0.5 * static_cast<double>(philox_normal(99, counter, 3)));
    ASSERT_EQ(got[j], static_cast<double>(expected)) << "element " << j;
  }
}

TEST(Init, PaddedRowsShardDrawsOnlyTheRealRows) {
  // (10, 3) with rows 7.. zero; rank boundaries before, inside and past the drawn rows.
  for (int tp : {1, 2, 5}) {
    Generator reference(5);
    Tensor full = Tensor::zeros({10, 3});
    full.narrow(0, 7).copy_from(Tensor::randn({7, 3}, reference, 0.0, 0.02));
    for (int r = 0; r < tp; ++r) {
      Generator gen(5);
      Tensor shard = padded_rows_shard(10, 7, 3, 0.0, 0.02, gen, Placement{}, r, tp);
      EXPECT_EQ(values(shard), values(nn::shard_of(full, ShardSpec{0, 1}, r, tp))) << "rank " << r << " of " << tp;
      EXPECT_EQ(gen.offset(), reference.offset());
    }
  }
}

TEST(Init, GPTWeightsAreTheFullDrawsInModelOrder) {
  GPTConfig c;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 16;
  c.block_size = 8;
  c.vocab_size = 37;
  c.padded_vocab_size = 48;
  Generator gen(21);
  GPT model(c, gen);
  std::map<std::string, Tensor> params;
  for (auto& [name, p] : model.named_parameters()) params[name] = p.data();

  // What drawing every weight whole, in order, gives (the initialisation before shard-local draws).
  Generator reference(21);
  Tensor wte = Tensor::zeros({48, 16});
  wte.narrow(0, 37).copy_from(Tensor::randn({37, 16}, reference, 0.0, 0.02));
  EXPECT_EQ(values(params["transformer.wte.weight"]), values(wte));
  EXPECT_EQ(values(params["transformer.wpe.weight"]), values(Tensor::randn({8, 16}, reference, 0.0, 0.02)));
  const double residual = residual_projection_std(c.n_layer);
  for (int i = 0; i < c.n_layer; ++i) {
    const std::string h = "transformer.h." + std::to_string(i) + ".";
    EXPECT_EQ(values(params[h + "attn.c_attn.weight"]), values(Tensor::randn({48, 16}, reference, 0.0, 0.02)));
    EXPECT_EQ(values(params[h + "attn.c_proj.weight"]), values(Tensor::randn({16, 16}, reference, 0.0, residual)));
    EXPECT_EQ(values(params[h + "mlp.c_fc.weight"]), values(Tensor::randn({64, 16}, reference, 0.0, 0.02)));
    EXPECT_EQ(values(params[h + "mlp.c_proj.weight"]), values(Tensor::randn({16, 64}, reference, 0.0, residual)));
    EXPECT_EQ(values(params[h + "ln_1.weight"]), std::vector<double>(16, 1.0));
    EXPECT_EQ(values(params[h + "mlp.c_fc.bias"]), std::vector<double>(64, 0.0));
  }
  EXPECT_EQ(gen.offset(), reference.offset());
}

TEST(Init, ASliceThatDoesNotFitTheTensorIsAnError) {
  Generator gen(1);
  test::expect_error_mentioning(
      [&] { normal_fill(Tensor::empty({4}), ElementSlice::whole(5), gen.reserve(5), 0.0, 1.0); }, {"5 elements"});
  test::expect_error_mentioning([&] { padded_rows_shard(4, 5, 2, 0.0, 1.0, gen, Placement{}); }, {"5 drawn rows"});
}

}  // namespace
}  // namespace nd::nn
