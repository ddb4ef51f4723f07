// Comm's ordering contract on a one-rank NcclComm (one GPU, no mpirun): a collective reads its
// input only after earlier compute-stream work, and compute-stream work queued after wait()
// sees its result, eagerly and inside a captured CUDA graph. The compute stream is kept busy
// (and, for the second half, the comm stream too) so that a missing order shows as stale or
// poisoned values. Every comm (and split) has a stream of its own, and a result handed from one
// comm to another through wait() arrives intact, eagerly and captured. Skips without a GPU.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "tensor/tensor.h"
#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>

#include "dist/comm/nccl_comm.h"
#include "dist/comm/world.h"
#include "tensor/cuda_check.h"
#include "tensor/cuda_stream.h"
#include "tests/common/captured_graph.h"
#endif

namespace nd::dist {
namespace {

#if NANODIST_WITH_CUDA
constexpr int64_t kBig = int64_t{64} << 20;  // floats: 256 MB per busy copy
constexpr int64_t kSmall = 4099;
constexpr int kBusyCopies = 16;

struct Buffers {
  Device gpu = Device::cuda(0);
  Tensor busy_a = Tensor::zeros({kBig}, DType::F32, gpu), busy_b = Tensor::zeros({kBig}, DType::F32, gpu);
  Tensor source = Tensor::full({kSmall}, 5.0, DType::F32, gpu);
  Tensor x = Tensor::zeros({kSmall}, DType::F32, gpu);  // the collective's input
  Tensor y = Tensor::zeros({kSmall}, DType::F32, gpu);  // its output
  Tensor z = Tensor::zeros({kSmall}, DType::F32, gpu);  // what compute reads after wait()

  void reset() {
    x.zero_();
    y.copy_from(Tensor::full({kSmall}, -1.0, DType::F32, gpu));  // poison
    z.zero_();
  }
};

void copy_on_compute(Tensor& dst, const Tensor& src) {
  CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), src.nbytes(), cudaMemcpyDeviceToDevice, compute_stream(0)));
}

// Compute: busy copies, then x = 5. Comm: (a long all-gather to keep the comm stream busy,
// unwaited) then y = all_gather(x). Compute again, after wait(): z = y. Correct order: z = 5;
// x read too early: z = 0; z copied before the gather: z = -1.
void enqueue(Comm& comm, Buffers& b) {
  for (int i = 0; i < kBusyCopies; ++i) copy_on_compute(i % 2 ? b.busy_a : b.busy_b, i % 2 ? b.busy_b : b.busy_a);
  copy_on_compute(b.x, b.source);
  CommWork busy_comm = comm.all_gather_async(b.busy_a, b.busy_b);
  CommWork gathered = comm.all_gather_async(b.x, b.y);
  gathered.wait();
  copy_on_compute(b.z, b.y);
  busy_comm.wait();
}

Comm& one_rank_nccl() {
  ensure_mpi_initialized();
  CUDA_CHECK(cudaSetDevice(0));
  static Comm* comm = new NcclComm(MPI_COMM_SELF, 0, /*wide_p2p=*/false);  // never destroyed: see nccl_ring_mpi_test
  return *comm;
}

// The split's stream is its own. Compute: busy copies, x = 5. Comm a (kept busy): y = gather(x),
// waited. Comm b: w = gather(y), waited. Compute: z = w. Without the waits b could read y early.
void enqueue_across(Comm& a, Comm& b, Buffers& buffers, Tensor& w) {
  for (int i = 0; i < kBusyCopies; ++i)
    copy_on_compute(i % 2 ? buffers.busy_a : buffers.busy_b, i % 2 ? buffers.busy_b : buffers.busy_a);
  copy_on_compute(buffers.x, buffers.source);
  CommWork busy = a.all_gather_async(buffers.busy_a, buffers.busy_b);
  CommWork first = a.all_gather_async(buffers.x, buffers.y);
  first.wait();
  CommWork second = b.all_gather_async(buffers.y, w);
  second.wait();
  copy_on_compute(buffers.z, w);
  busy.wait();
}

TEST(CommOrder, EachCommHasItsOwnStreamAndWaitHandsResultsOn) {
  if (!cuda_available()) GTEST_SKIP() << "no GPU";
  Comm& a = one_rank_nccl();
  std::unique_ptr<Comm> b = a.split(0, 0);
  auto* nccl_a = dynamic_cast<NcclComm*>(&a);
  auto* nccl_b = dynamic_cast<NcclComm*>(b.get());
  ASSERT_TRUE(nccl_a && nccl_b);
  EXPECT_NE(nccl_a->stream(), nccl_b->stream());
  EXPECT_NE(nccl_a->stream(), compute_stream(0));
  Buffers buffers;
  Tensor w = Tensor::zeros({kSmall}, DType::F32, buffers.gpu);
  buffers.reset();
  enqueue_across(a, *b, buffers, w);
  EXPECT_EQ(buffers.z.to_double_vector(), std::vector<double>(kSmall, 5.0));

  cudaStream_t stream = compute_stream(0);
  synchronize_device_streams(0);
  // Fails when either comm's stream was forked into the capture and never joined back.
  test::CapturedGraph graph(stream, [&] { enqueue_across(a, *b, buffers, w); });
  ASSERT_TRUE(graph.ok());
  for (int replay = 0; replay < 2; ++replay) {
    buffers.reset();
    w.copy_from(Tensor::full({kSmall}, -2.0, DType::F32, buffers.gpu));
    ASSERT_TRUE(graph.replay());
    EXPECT_EQ(buffers.z.to_double_vector(), std::vector<double>(kSmall, 5.0)) << "replay " << replay;
  }
  b->synchronize();
}

TEST(CommOrder, EagerCollectiveWaitsForComputeAndComputeForIt) {
  if (!cuda_available()) GTEST_SKIP() << "no GPU";
  Comm& comm = one_rank_nccl();
  Buffers b;
  b.reset();
  enqueue(comm, b);
  EXPECT_EQ(b.z.to_double_vector(), std::vector<double>(kSmall, 5.0));
}

TEST(CommOrder, SameOrderInsideACapturedGraph) {
  if (!cuda_available()) GTEST_SKIP() << "no GPU";
  Comm& comm = one_rank_nccl();
  Buffers b;
  b.reset();
  enqueue(comm, b);  // first use outside the capture (NCCL sets up lazily)
  cudaStream_t stream = compute_stream(0);
  synchronize_device_streams(0);
  // Fails when the comm stream was forked into the capture and never joined back.
  test::CapturedGraph graph(stream, [&] { enqueue(comm, b); });
  ASSERT_TRUE(graph.ok());
  for (int replay = 0; replay < 3; ++replay) {
    b.reset();
    ASSERT_TRUE(graph.replay());
    EXPECT_EQ(b.z.to_double_vector(), std::vector<double>(kSmall, 5.0)) << "replay " << replay;
  }
}
#endif

}  // namespace
}  // namespace nd::dist
