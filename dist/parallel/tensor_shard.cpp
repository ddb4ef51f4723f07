// gather_full_tensor: one all-gather of the shards, reassembled on the host.
#include "dist/parallel/tensor_shard.h"

namespace nd::dist {

Tensor gather_full_tensor(Comm& comm, const Tensor& shard, const nn::ShardSpec& spec) {
  if (!spec.sharded() || comm.size() == 1) return shard.to(Device::cpu()).clone();
  const int tp = comm.size();
  Tensor gathered = Tensor::empty({tp * shard.numel()}, shard.dtype(), comm.device());
  comm.all_gather(shard.view({-1}), gathered);
  comm.synchronize();
  Tensor host = gathered.to(Device::cpu());
  std::vector<Tensor> shards;
  for (int r = 0; r < tp; ++r) shards.push_back(host.narrow(r * shard.numel(), shard.numel()).view(shard.shape()));
  return nn::full_from_shards(shards, spec);
}

}  // namespace nd::dist
