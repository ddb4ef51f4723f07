// Broadcast and all-to-all on NCCL under mpirun (one rank per GPU), native (ncclBroadcast; a group
// of ncclSend/ncclRecv per peer) and ours (RingComm: the chain broadcast, direct below 64 KB and in
// slices above; the pairwise all-to-all), against the closed form, f32 and bf16, every root; the
// pairwise all-to-all captured into a CUDA graph and replayed. Skips without a GPU per rank.
#include <gtest/gtest.h>

#include <string>

#include "dist/comm/ring_comm.h"
#include "tests/common/captured_graph.h"
#include "tests/dist/collective_inputs.h"
#include "tests/dist/nccl_test_world.h"
#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>

#include "tensor/cuda_stream.h"
#endif

namespace nd::dist {
namespace {

using test::gpu_world;
using test::rank_input;
using test::rank_value;

std::vector<double> transposed(int n, int r, int64_t block, uint64_t seed) {
  std::vector<double> want;
  for (int q = 0; q < n; ++q)
    for (int64_t i = 0; i < block; ++i) want.push_back(rank_value(q, r * block + i, seed));
  return want;
}

TEST(CollectivesNccl, BroadcastAndAllToAllNativeAndOurs) {
  SKIP_WITHOUT_GPU();
  Comm& native = gpu_world();
  RingOptions small_slices;
  small_slices.slice_bytes = 256 << 10;  // the chain pipelines at 3 ranks and more
  RingComm ours(native, small_slices);
  const int n = native.size(), r = native.rank();
  const Device gpu = native.device();
  for (Comm* comm : {&native, static_cast<Comm*>(&ours)}) {
    const std::string name = comm == &native ? "native" : "ours";
    for (DType dtype : {DType::F32, DType::BF16})
      for (int64_t count : {int64_t{1}, int64_t{1000}, int64_t{40000}, int64_t{1000003}}) {
        for (int root = 0; root < n; ++root) {
          SCOPED_TRACE(name + " broadcast " + dtype_name(dtype) + " count " + std::to_string(count) + " root " +
                       std::to_string(root));
          Tensor b = rank_input(r, count, dtype, 40 + root, gpu);
          comm->broadcast(b, root);
          std::vector<double> want(count);
          for (int64_t i = 0; i < count; ++i) want[i] = rank_value(root, i, 40 + root);
          EXPECT_EQ(b.to_double_vector(), want);
        }
        SCOPED_TRACE(name + " all-to-all " + dtype_name(dtype) + " block " + std::to_string(count));
        const Tensor input = rank_input(r, count * n, dtype, 45, gpu);
        Tensor output = Tensor::full({count * n}, -99.0, dtype, gpu);
        comm->all_to_all(input, output);
        EXPECT_EQ(output.to_double_vector(), transposed(n, r, count, 45));
      }
  }
}

TEST(CollectivesNccl, AllToAllReplaysFromAGraph) {
  SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  Comm& native = gpu_world();
  RingComm ours(native);
  const int n = native.size(), r = native.rank();
  const Device gpu = native.device();
  const int64_t block = 5001;
  Tensor input = rank_input(r, block * n, DType::BF16, 46, gpu);
  Tensor output = Tensor::zeros({block * n}, DType::BF16, gpu);
  ours.all_to_all(input, output);  // eager first: the layout agreement
  native.synchronize();
  cudaStream_t stream = compute_stream(gpu.index);
  test::CapturedGraph graph(stream, [&] { ours.all_to_all(input, output); });
  ASSERT_TRUE(graph.ok());
  for (int replay = 0; replay < 3; ++replay) {
    output.zero_();
    ASSERT_TRUE(graph.replay());
    EXPECT_EQ(output.to_double_vector(), transposed(n, r, block, 46)) << "replay " << replay;
  }
#endif
}

}  // namespace
}  // namespace nd::dist
