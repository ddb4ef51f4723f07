// Slicing a full tensor into shards and back, as byte copies (any dtype). A tensor is seen as
// (outer, D, inner) around the split dimension D = parts * tp * L; a shard is (outer, parts * L, inner).
#include "nn/shard_spec.h"

#include <cstring>

#include "tensor/error.h"

namespace nd::nn {

namespace {

struct SplitLayout {
  int64_t outer = 1, inner = 1;  // elements before / after the split dimension
  int64_t block = 0;             // L: rows of one part one rank holds
  int parts = 1;
};

SplitLayout layout_of(const Shape& full, const ShardSpec& spec, int tp) {
  const int ndim = static_cast<int>(full.size());
  ND_CHECK(spec.dim >= 0 && spec.dim < ndim && spec.parts >= 1 && tp >= 1,
           "shard: cannot split " << shape_str(full) << " along dimension " << spec.dim << " in " << spec.parts
                                  << " parts over " << tp << " ranks");
  const int64_t D = full[spec.dim];
  ND_CHECK(D % (static_cast<int64_t>(spec.parts) * tp) == 0,
           "shard: dimension " << spec.dim << " of " << shape_str(full) << " (" << D << ") does not split into "
                               << spec.parts << " part(s) x " << tp << " ranks");
  SplitLayout l;
  for (int i = 0; i < spec.dim; ++i) l.outer *= full[i];
  for (int i = spec.dim + 1; i < ndim; ++i) l.inner *= full[i];
  l.block = D / (static_cast<int64_t>(spec.parts) * tp);
  l.parts = spec.parts;
  return l;
}

// Copies rank `rank`'s blocks between the full buffer and its shard buffer, either way.
void copy_blocks(char* full, char* shard, const SplitLayout& l, int64_t D, int rank, int tp, size_t elem,
                 bool to_shard) {
  const size_t run = static_cast<size_t>(l.block * l.inner) * elem;
  const int64_t part_rows = l.block * tp;
  for (int64_t o = 0; o < l.outer; ++o) {
    for (int p = 0; p < l.parts; ++p) {
      char* f = full + static_cast<size_t>((o * D + p * part_rows + rank * l.block) * l.inner) * elem;
      char* s = shard + static_cast<size_t>((o * l.parts + p) * l.block * l.inner) * elem;
      if (to_shard) {
        std::memcpy(s, f, run);
      } else {
        std::memcpy(f, s, run);
      }
    }
  }
}

}  // namespace

Shape shard_shape(const Shape& full, const ShardSpec& spec, int tp) {
  if (!spec.sharded()) return full;
  const SplitLayout l = layout_of(full, spec, tp);
  Shape out = full;
  out[spec.dim] = l.block * spec.parts;
  return out;
}

ElementSlice shard_elements(const Shape& full, const ShardSpec& spec, int rank, int tp) {
  ND_CHECK(rank >= 0 && rank < tp, "shard_elements: rank " << rank << " out of range for tp " << tp);
  if (!spec.sharded() || shape_numel(full) == 0) return ElementSlice::whole(shape_numel(full));
  const SplitLayout l = layout_of(full, spec, tp);
  const int64_t D = full[spec.dim];
  ElementSlice s;
  s.outer = l.outer;
  s.outer_stride = D * l.inner;
  s.parts = l.parts;
  s.part_stride = l.block * tp * l.inner;
  s.run = l.block * l.inner;
  s.offset = rank * l.block * l.inner;
  return s;
}

Tensor shard_of(const Tensor& full, const ShardSpec& spec, int rank, int tp) {
  ND_CHECK(full.device().is_cpu(), "shard_of: " << full.str() << " must be on the CPU");
  ND_CHECK(rank >= 0 && rank < tp, "shard_of: rank " << rank << " out of range for tp " << tp);
  if (!spec.sharded()) return full.clone();
  const SplitLayout l = layout_of(full.shape(), spec, tp);
  Tensor shard = Tensor::empty(shard_shape(full.shape(), spec, tp), full.dtype(), Device::cpu());
  copy_blocks(static_cast<char*>(full.raw_data()), static_cast<char*>(shard.raw_data()), l, full.size(spec.dim),
              rank, tp, dtype_size(full.dtype()), true);
  return shard;
}

Tensor full_from_shards(const std::vector<Tensor>& shards, const ShardSpec& spec) {
  ND_CHECK(!shards.empty(), "full_from_shards: no shards");
  const int tp = static_cast<int>(shards.size());
  for (const Tensor& s : shards) {
    ND_CHECK(s.device().is_cpu(), "full_from_shards: " << s.str() << " must be on the CPU");
    ND_CHECK(s.shape() == shards[0].shape() && s.dtype() == shards[0].dtype(),
             "full_from_shards: shards " << shards[0].str() << " and " << s.str() << " differ");
  }
  if (!spec.sharded()) return shards[0].clone();
  Shape full_shape = shards[0].shape();
  ND_CHECK(spec.dim < static_cast<int>(full_shape.size()),
           "full_from_shards: shard " << shards[0].str() << " has no dimension " << spec.dim);
  full_shape[spec.dim] *= tp;
  const SplitLayout l = layout_of(full_shape, spec, tp);
  Tensor full = Tensor::empty(full_shape, shards[0].dtype(), Device::cpu());
  for (int r = 0; r < tp; ++r)
    copy_blocks(static_cast<char*>(full.raw_data()), static_cast<char*>(shards[r].raw_data()), l, full_shape[spec.dim],
                r, tp, dtype_size(full.dtype()), false);
  return full;
}

}  // namespace nd::nn
