// Shards of full tensors: the exact elements a rank keeps (rows, columns, and c_attn's three
// packed parts each split by head), the same elements named by shard_elements, full -> shards ->
// full round trips in f32 and bf16 at tp 1 to 4, and the errors for a dimension that does not split.
#include <gtest/gtest.h>

#include "autograd/op_test_util.h"
#include "nn/shard_spec.h"

namespace nd::nn {
namespace {

Tensor iota(const Shape& shape) {
  std::vector<float> v(shape_numel(shape));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return Tensor::from_vector(v, shape);
}

std::vector<float> values(const Tensor& t) { return t.to_float_vector(); }

TEST(TensorShard, RowsOfPackedPartsAreSplitPartByPart) {
  // (6, 2): three parts of two rows (q, k, v); over 2 ranks each keeps one row of each part.
  Tensor full = iota({6, 2});
  const ShardSpec qkv{0, 3};
  EXPECT_EQ(shard_shape(full.shape(), qkv, 2), (Shape{3, 2}));
  EXPECT_EQ(values(shard_of(full, qkv, 0, 2)), (std::vector<float>{0, 1, 4, 5, 8, 9}));
  EXPECT_EQ(values(shard_of(full, qkv, 1, 2)), (std::vector<float>{2, 3, 6, 7, 10, 11}));
}

TEST(TensorShard, ColumnsAndPlainRows) {
  Tensor full = iota({2, 4});
  EXPECT_EQ(values(shard_of(full, ShardSpec{1, 1}, 1, 2)), (std::vector<float>{2, 3, 6, 7}));
  EXPECT_EQ(values(shard_of(full, ShardSpec{0, 1}, 1, 2)), (std::vector<float>{4, 5, 6, 7}));
  EXPECT_EQ(values(shard_of(full, ShardSpec{}, 1, 2)), values(full));  // replicated
  // A packed bias (12) = q, k, v of 4 each; rank 1 of 2 keeps the second half of each.
  EXPECT_EQ(values(shard_of(iota({12}), ShardSpec{0, 3}, 1, 2)), (std::vector<float>{2, 3, 6, 7, 10, 11}));
}

TEST(TensorShard, FullFromShardsInvertsShardOf) {
  Generator gen(7);
  for (DType dtype : {DType::F32, DType::BF16}) {
    for (ShardSpec spec : {ShardSpec{0, 1}, ShardSpec{0, 3}, ShardSpec{1, 1}, ShardSpec{2, 1}, ShardSpec{}}) {
      for (int tp = 1; tp <= 4; ++tp) {
        Tensor full = Tensor::randn({12 * tp, 6 * tp, 2 * tp}, gen, 0.0, 1.0).to(dtype);
        std::vector<Tensor> shards;
        for (int r = 0; r < tp; ++r) shards.push_back(shard_of(full, spec, r, tp));
        Tensor back = full_from_shards(shards, spec);
        ASSERT_EQ(back.shape(), full.shape());
        EXPECT_EQ(back.to_double_vector(), full.to_double_vector())
            << "dim " << spec.dim << " parts " << spec.parts << " tp " << tp << " " << dtype_name(dtype);
      }
    }
  }
}

TEST(TensorShard, ShardElementsNameTheElementsShardOfKeeps) {
  // The index of every element, sliced by shard_of, against shard_elements' mapping.
  for (ShardSpec spec : {ShardSpec{0, 1}, ShardSpec{0, 3}, ShardSpec{1, 1}, ShardSpec{2, 1}, ShardSpec{1, 3}, ShardSpec{}}) {
    for (int tp = 1; tp <= 4; ++tp) {
      const Shape shape{6 * tp, 3 * tp, 2 * tp};
      for (int r = 0; r < tp; ++r) {
        const std::vector<float> kept = values(shard_of(iota(shape), spec, r, tp));
        const ElementSlice slice = shard_elements(shape, spec, r, tp);
        ASSERT_EQ(slice.size(), static_cast<int64_t>(kept.size())) << "dim " << spec.dim << " tp " << tp;
        for (int64_t j = 0; j < slice.size(); ++j)
          ASSERT_EQ(slice.full_index(j), static_cast<int64_t>(kept[j]))
              << "element " << j << " of rank " << r << ", dim " << spec.dim << " parts " << spec.parts << " tp " << tp;
      }
    }
  }
}

TEST(TensorShard, ADimensionThatDoesNotSplitIsAnError) {
  test::expect_error_mentioning([] { shard_shape({9, 4}, ShardSpec{0, 3}, 2); }, {"[9, 4]", "3 part(s) x 2 ranks"});
  test::expect_error_mentioning([] { shard_of(iota({4, 5}), ShardSpec{1, 1}, 0, 2); }, {"[4, 5]", "(5)"});
  test::expect_error_mentioning([] { shard_of(iota({4}), ShardSpec{1, 1}, 0, 2); }, {"dimension 1"});
}

}  // namespace
}  // namespace nd::nn
