// The engine for a ZeRO stage.
#include "dist/parallel/data_parallel.h"

#include "dist/parallel/distributed_data_parallel.h"
#include "dist/parallel/fully_sharded_data_parallel.h"

namespace nd::dist {

std::unique_ptr<DataParallelEngine> make_data_parallel(Comm& comm, FlatParams& flat, const DataParallelOptions& options) {
  if (options.zero <= 1) return std::make_unique<DistributedDataParallel>(comm, flat, options);
  return std::make_unique<FullyShardedDataParallel>(comm, flat, options);
}

}  // namespace nd::dist
