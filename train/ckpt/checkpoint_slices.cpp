// Hyperslab arithmetic for sharded checkpoints: held and owned blocks, intersections, box copies.
#include "train/ckpt/checkpoint_slices.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <sstream>

#include "tensor/error.h"

namespace nd::train {

int64_t Hyperslab::numel() const {
  int64_t n = 1;
  for (int64_t c : count) n *= c;
  return n;
}

Hyperslab whole(const std::vector<int64_t>& shape) {
  return Hyperslab{std::vector<int64_t>(shape.size(), 0), shape};
}

Hyperslab intersect(const Hyperslab& a, const Hyperslab& b) {
  ND_CHECK(a.offset.size() == b.offset.size(), "hyperslabs of " << a.offset.size() << " and " << b.offset.size()
                                                                << " dimensions");
  Hyperslab out{a.offset, a.count};
  for (size_t d = 0; d < a.offset.size(); ++d) {
    const int64_t lo = std::max(a.offset[d], b.offset[d]);
    const int64_t hi = std::min(a.offset[d] + a.count[d], b.offset[d] + b.count[d]);
    out.offset[d] = lo;
    out.count[d] = std::max<int64_t>(0, hi - lo);
  }
  return out;
}

std::vector<BlockMap> held_blocks(const TensorPlacement& p) {
  const size_t ndim = p.local_shape.size();
  ND_CHECK(p.full_shape.size() == ndim, "checkpoint layout: full shape " << dims_str(p.full_shape)
                                                                         << " and local shape " << dims_str(p.local_shape)
                                                                         << " differ in rank");
  std::vector<BlockMap> blocks;
  if (!p.spec.sharded() || p.tp_size == 1) {
    // The local tensor is the full one (padded, perhaps).
    BlockMap b{whole(p.local_shape), whole(p.local_shape)};
    b.full = intersect(b.full, whole(p.full_shape));
    b.local.count = b.full.count;
    if (!b.full.empty()) blocks.push_back(b);
    return blocks;
  }
  const int dim = p.spec.dim;
  ND_CHECK(dim >= 0 && static_cast<size_t>(dim) < ndim && p.local_shape[dim] % p.spec.parts == 0,
           "checkpoint layout: cannot split " << dims_str(p.local_shape) << " in " << p.spec.parts << " parts along "
                                              << dim);
  const int64_t L = p.local_shape[dim] / p.spec.parts;  // rows of one part this rank holds
  for (int part = 0; part < p.spec.parts; ++part) {
    BlockMap b{whole(p.local_shape), whole(p.local_shape)};
    b.local.offset[dim] = part * L;
    b.local.count[dim] = L;
    b.full.offset[dim] = part * L * p.tp_size + p.tp_rank * L;
    b.full.count[dim] = L;
    Hyperslab clipped = intersect(b.full, whole(p.full_shape));
    if (clipped.empty()) continue;
    b.local.count = clipped.count;  // clipping only trims the end of a block
    b.full = clipped;
    blocks.push_back(b);
  }
  return blocks;
}

std::vector<BlockMap> owned_blocks(const TensorPlacement& p, const std::string& name, int holder, int holders) {
  ND_CHECK(holders >= 1 && holder >= 0 && holder < holders, "checkpoint layout: holder " << holder << " of " << holders);
  std::vector<BlockMap> out;
  const std::vector<BlockMap> held = held_blocks(p);
  const size_t name_hash = std::hash<std::string>{}(name);
  for (size_t i = 0; i < held.size(); ++i) {
    const BlockMap& b = held[i];
    const int64_t rows = b.full.count.empty() ? 1 : b.full.count[0];
    if (b.full.numel() * 4 < kSplitBytes || rows < holders || b.full.count.empty()) {
      if (static_cast<int>((name_hash + i) % holders) == holder) out.push_back(b);
      continue;
    }
    const int64_t lo = rows * holder / holders, hi = rows * (holder + 1) / holders;
    BlockMap mine = b;
    mine.full.offset[0] += lo;
    mine.local.offset[0] += lo;
    mine.full.count[0] = mine.local.count[0] = hi - lo;
    if (hi > lo) out.push_back(mine);
  }
  return out;
}

void copy_box(const char* src, const std::vector<int64_t>& src_shape, const std::vector<int64_t>& src_start,
              char* dst, const std::vector<int64_t>& dst_shape, const std::vector<int64_t>& dst_start,
              const std::vector<int64_t>& count, size_t elem) {
  const size_t ndim = count.size();
  for (int64_t c : count)
    if (c == 0) return;
  if (ndim == 0) {
    std::memcpy(dst, src, elem);
    return;
  }
  // Strides in elements; the innermost dimension is one contiguous run.
  std::vector<int64_t> src_stride(ndim, 1), dst_stride(ndim, 1);
  for (size_t d = ndim - 1; d > 0; --d) {
    src_stride[d - 1] = src_stride[d] * src_shape[d];
    dst_stride[d - 1] = dst_stride[d] * dst_shape[d];
  }
  const size_t run = static_cast<size_t>(count[ndim - 1]) * elem;
  std::vector<int64_t> index(ndim, 0);  // over the outer ndim - 1 dimensions
  while (true) {
    int64_t s = 0, t = 0;
    for (size_t d = 0; d < ndim; ++d) {
      s += (src_start[d] + index[d]) * src_stride[d];
      t += (dst_start[d] + index[d]) * dst_stride[d];
    }
    std::memcpy(dst + t * elem, src + s * elem, run);
    size_t d = ndim - 1;
    while (d > 0) {
      --d;
      if (++index[d] < count[d]) break;
      index[d] = 0;
      if (d == 0) return;
    }
    if (ndim == 1) return;
  }
}

std::string dims_str(const std::vector<int64_t>& dims) {
  std::string out;
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? "," : "") + std::to_string(dims[i]);
  return out;
}

std::vector<int64_t> parse_dims(const std::string& text) {
  std::vector<int64_t> dims;
  if (text.empty()) return dims;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    ND_CHECK(!item.empty() && item.find_first_not_of("0123456789") == std::string::npos,
             "malformed dimension list '" << text << "'");
    dims.push_back(std::stoll(item));
  }
  return dims;
}

}  // namespace nd::train
