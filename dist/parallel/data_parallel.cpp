// The engine for a ZeRO stage.
#include "dist/parallel/data_parallel.h"

#include <algorithm>

#include "dist/parallel/distributed_data_parallel.h"
#include "dist/parallel/fully_sharded_data_parallel.h"

namespace nd::dist {

std::unique_ptr<DataParallelEngine> make_data_parallel(Comm& comm, FlatParams& flat, const DataParallelOptions& options) {
  if (options.zero <= 1) return std::make_unique<DistributedDataParallel>(comm, flat, options);
  return std::make_unique<FullyShardedDataParallel>(comm, flat, options);
}

std::vector<Tensor> held_gradient(const DataParallelEngine& engine, FlatParams& flat, const FlatEntry& e) {
  if (engine.owned().empty()) return {flat.grad_of(e).view({-1})};
  const Tensor shard = engine.shard_grads();
  std::vector<Tensor> pieces;
  for (const ShardSlice& s : engine.owned()) {
    const int64_t begin = std::max(e.offset, s.begin), end = std::min(e.offset + e.numel, s.begin + s.length);
    if (begin >= end) continue;
    pieces.push_back(shard.defined() ? shard.narrow(s.local + (begin - s.begin), end - begin)
                                     : flat.grads().narrow(begin, end - begin));
  }
  return pieces;
}

}  // namespace nd::dist
