// The copy-engine reduce-scatter and all-gather of PeerComm (dist/comm/peer_copy.h) on NCCL under
// mpirun (one rank per GPU, one node), against the closed form: sizes from one element to the
// block limit, f32 and bf16, sum and average; many calls in a row without a host wait (the slots
// wrap around; a slot's flags must keep the calls apart); a CUDA graph of gathers (one into a
// shared buffer) and a scatter replayed several times; blocks above the slot size in pieces; gathers
// straight into shared buffers (PeerMemory::shared_tensor) and the scratch lent from them
// (PeerMemory::gather_scratch); the scatter that adds into its output; Max goes to NCCL. Skips where there
// is no GPU per rank; where the GPUs share no peer memory it says so and the results still hold.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "dist/parallel/flat_params.h"
#include "dist/comm/peer_comm.h"
#include "tests/common/captured_graph.h"
#include "tests/dist/collective_inputs.h"
#include "tests/dist/nccl_test_world.h"
#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>

#include "tensor/cuda_stream.h"
#endif

namespace nd::dist {
namespace {

using test::count_mismatches;
using test::gpu_world;
using test::rank_input;
using test::rank_value;

constexpr int64_t kBlockBytes = int64_t{1} << 20;

PeerOptions copy_options() {
  PeerOptions options;
  options.buffer_bytes = int64_t{1} << 20;
  options.copy_block_bytes = kBlockBytes;
  options.timeout_s = 20;
  return options;
}

// Block r of the gathered whole is rank r's input.
void expect_gathered(const Tensor& got, int n, int64_t count, uint64_t seed, const std::string& what) {
  std::vector<double> want;
  for (int r = 0; r < n; ++r)
    for (int64_t i = 0; i < count; ++i) want.push_back(rank_value(r, i, seed));
  EXPECT_EQ(count_mismatches(got.to_double_vector(), want, 0.0, what.c_str(), 0.0), 0);
}

// This rank's block of the sum over ranks of inputs of n * count elements.
void expect_scattered(const Tensor& got, int n, int r, int64_t count, uint64_t seed, DType dtype, ReduceOp op,
                      const std::string& what) {
  test::expect_reduced_near(got, test::reduced_over_ranks(n, count, seed, op, r * count), dtype, op, what);
}

const std::vector<int64_t> kCounts = {1, 2, 3, 7, 8, 9, 1000, 4097, 65536, 100003, 262144};

TEST(PeerCopyNccl, GatherAndScatterGiveTheClosedForm) {
  SKIP_WITHOUT_GPU();
  Comm& world = gpu_world();
  const int n = world.size(), r = world.rank();
  PeerComm peer(world, copy_options());
  if (r == 0 && !peer.copy_usable()) std::printf("no copy-engine collectives here: %s\n", peer.copy_unusable_reason().c_str());
  for (DType dtype : {DType::F32, DType::BF16})
    for (int64_t count : kCounts) {
      if (count * static_cast<int64_t>(dtype_size(dtype)) > kBlockBytes) continue;
      const uint64_t seed = 500 + count % 89;
      const std::string what = std::string(dtype_name(dtype)) + " count " + std::to_string(count);
      SCOPED_TRACE(what);
      Tensor whole = Tensor::empty({n * count}, dtype, world.device());
      peer.all_gather(rank_input(r, count, dtype, seed, world.device()), whole);
      expect_gathered(whole, n, count, seed, "gather " + what);
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
        Tensor share = Tensor::empty({count}, dtype, world.device());
        peer.reduce_scatter(rank_input(r, n * count, dtype, seed, world.device()), share, op);
        expect_scattered(share, n, r, count, seed, dtype, op, std::string("scatter ") + reduce_op_name(op) + " " + what);
      }
    }
}

// A bf16 input scattered into f32 (what ZeRO's bf16 gradients take, PeerMemory::reduce_scatter_widens)
// has the bits of the f32 scatter of the same input widened on the host first, for values whose
// sums round: in one slot, in several pieces with a tail, at a size not a multiple of the 16-byte
// packs (the unaligned path); sum and average. Where the copy engines are not usable the comm says
// it does not widen, and a mixed-dtype call is refused.
TEST(PeerCopyNccl, WideningScatterHasTheBitsOfTheF32One) {
  SKIP_WITHOUT_GPU();
  Comm& world = gpu_world();
  const int n = world.size(), r = world.rank();
  PeerComm peer(world, copy_options());
  EXPECT_EQ(peer.reduce_scatter_widens(ReduceOp::Avg), peer.copy_usable());
  EXPECT_FALSE(peer.reduce_scatter_widens(ReduceOp::Max));
  if (!peer.copy_usable()) return;
  for (int64_t count : {int64_t{4096}, kBlockBytes / 2 + 8, 3 * kBlockBytes / 2 + 1001, int64_t{1001}}) {
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
      const std::string what = std::string(reduce_op_name(op)) + " count " + std::to_string(count);
      SCOPED_TRACE(what);
      std::vector<float> values(n * count);
      for (int64_t i = 0; i < n * count; ++i)
        values[i] = 2.0f * philox_uniform(900 + count, static_cast<uint64_t>(i), static_cast<uint64_t>(r)) - 1.0f;
      const Tensor narrow = Tensor::from_vector(values, {n * count}, DType::BF16);
      Tensor widened_share = Tensor::empty({count}, DType::F32, world.device());
      peer.reduce_scatter(narrow.to(world.device()), widened_share, op);
      Tensor f32_share = Tensor::empty({count}, DType::F32, world.device());
      peer.reduce_scatter(narrow.to(DType::F32).to(world.device()), f32_share, op);
      const std::vector<float> got = widened_share.to_float_vector();
      const std::vector<float> want = f32_share.to_float_vector();
      ASSERT_EQ(got.size(), want.size());
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << "the bits differ";
    }
  }
  Tensor narrow = Tensor::zeros({n * 8L}, DType::BF16, world.device());
  Tensor wide = Tensor::empty({8}, DType::F32, world.device());
  EXPECT_THROW(peer.reduce_scatter(narrow, wide, ReduceOp::Max), Error);
}

// The accumulating scatter (PeerMemory::reduce_scatter_accumulate_async, ZeRO's later micro-batches) adds
// into what the f32 output holds the bits of scattering into a temporary and adding that on the host,
// f32 and bf16 inputs, in one slot, in pieces with a tail, unaligned; sum and average.
// A comm that does not accumulate (NCCL) says so, and a call the copy engines cannot take is refused.
TEST(PeerCopyNccl, AccumulatingScatterHasTheBitsOfScatterThenAdd) {
  SKIP_WITHOUT_GPU();
  Comm& world = gpu_world();
  const int n = world.size(), r = world.rank();
  PeerComm peer(world, copy_options());
  EXPECT_EQ(peer.reduce_scatter_accumulates(ReduceOp::Avg, DType::F32, DType::F32), peer.copy_usable());
  EXPECT_FALSE(peer.reduce_scatter_accumulates(ReduceOp::Max, DType::F32, DType::F32));
  EXPECT_FALSE(peer.reduce_scatter_accumulates(ReduceOp::Avg, DType::BF16, DType::BF16));
  if (!peer.copy_usable()) return;
  for (DType in : {DType::F32, DType::BF16})
    for (int64_t count : {int64_t{4096}, kBlockBytes / 2 + 8, 3 * kBlockBytes / 2 + 1001, int64_t{1001}})
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
        const std::string what =
            std::string(dtype_name(in)) + " " + reduce_op_name(op) + " count " + std::to_string(count);
        SCOPED_TRACE(what);
        std::vector<float> values(n * count), before(count);
        for (int64_t i = 0; i < n * count; ++i)
          values[i] = 2.0f * philox_uniform(700 + count, static_cast<uint64_t>(i), static_cast<uint64_t>(r)) - 1.0f;
        for (int64_t i = 0; i < count; ++i)
          before[i] = philox_uniform(800 + count, static_cast<uint64_t>(i), 0) - 0.5f;
        const Tensor input = Tensor::from_vector(values, {n * count}, in).to(world.device());
        Tensor sum = Tensor::from_vector(before, {count}, DType::F32).to(world.device());
        peer.reduce_scatter_accumulate_async(input, sum, op).wait();
        Tensor share = Tensor::empty({count}, DType::F32, world.device());
        peer.reduce_scatter(input, share, op);
        const std::vector<float> got = sum.to_float_vector(), scattered = share.to_float_vector();
        std::vector<float> want(count);
        for (int64_t i = 0; i < count; ++i) want[i] = before[i] + scattered[i];
        EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << "the bits differ";
      }
  Tensor input = Tensor::zeros({n * 8L}, DType::F32, world.device());
  Tensor out = Tensor::zeros({8}, DType::F32, world.device());
  EXPECT_EQ(world.peer_memory(), nullptr);
  EXPECT_FALSE(reduce_scatter_accumulates(world, ReduceOp::Avg, DType::F32, DType::F32));
  EXPECT_THROW((void)peer.reduce_scatter_accumulate_async(input, out, ReduceOp::Max), Error);
}

// Many calls back to back, the results checked only at the end: slot k % kSlots is reused every
// kSlots calls, so a sender must wait until its peer has taken the slot's last block.
TEST(PeerCopyNccl, CallsInARowStayApart) {
  SKIP_WITHOUT_GPU();
  Comm& world = gpu_world();
  const int n = world.size(), r = world.rank();
  PeerComm peer(world, copy_options());
  constexpr int kCalls = 60;
  std::vector<Tensor> gathered, scattered;
  std::vector<Tensor> inputs;  // alive until the calls have run
  for (int k = 0; k < kCalls; ++k) {
    const int64_t count = 20000 + 999 * (k % 7);
    inputs.push_back(rank_input(r, count, DType::BF16, 900 + k, world.device()));
    gathered.push_back(Tensor::empty({n * count}, DType::BF16, world.device()));
    peer.all_gather_async(inputs.back(), gathered.back()).wait();
    inputs.push_back(rank_input(r, n * count, DType::F32, 1900 + k, world.device()));
    scattered.push_back(Tensor::empty({count}, DType::F32, world.device()));
    peer.reduce_scatter_async(inputs.back(), scattered.back(), ReduceOp::Sum).wait();
  }
  for (int k = 0; k < kCalls; ++k) {
    const int64_t count = 20000 + 999 * (k % 7);
    expect_gathered(gathered[k], n, count, 900 + k, "gather call " + std::to_string(k));
    expect_scattered(scattered[k], n, r, count, 1900 + k, DType::F32, ReduceOp::Sum, "scatter call " + std::to_string(k));
  }
}

TEST(PeerCopyNccl, GraphReplaysGiveTheClosedForm) {
  SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  Comm& world = gpu_world();
  const int n = world.size(), r = world.rank();
  PeerComm peer(world, copy_options());
  const Device gpu = world.device();
  constexpr int64_t kCount = 30011;
  Tensor share_in = rank_input(r, kCount, DType::BF16, 60, gpu);
  Tensor whole_in = rank_input(r, n * kCount, DType::BF16, 61, gpu);
  Tensor whole_out = Tensor::empty({n * kCount}, DType::BF16, gpu);
  Tensor share_out = Tensor::empty({kCount}, DType::BF16, gpu);
  // Gathers into a shared buffer too (straight into place, no slot), copied out before the next.
  Tensor shared = peer.shared_tensor({n * kCount}, DType::BF16);
  Tensor kept = Tensor::empty({n * kCount}, DType::BF16, gpu);
  // Five of each, so that a replay wraps around the slots.
  auto step = [&] {
    for (int k = 0; k < 5; ++k) {
      peer.all_gather(share_in, whole_out);
      peer.reduce_scatter(whole_in, share_out, ReduceOp::Sum);
      peer.all_gather(share_in, shared);
    }
    copy_in_stream_order(shared, kept);
  };
  step();  // eager: the layout agreements happen here, outside the capture
  world.synchronize();
  cudaStream_t stream = compute_stream(gpu.index);
  test::CapturedGraph graph(stream, step);
  ASSERT_TRUE(graph.ok());
  for (int replay = 0; replay < 4; ++replay) {
    share_in.copy_from(rank_input(r, kCount, DType::BF16, 70 + replay));
    whole_in.copy_from(rank_input(r, n * kCount, DType::BF16, 80 + replay));
    ASSERT_TRUE(graph.replay());
    expect_gathered(whole_out, n, kCount, 70 + replay, "replay " + std::to_string(replay) + " gather");
    expect_gathered(kept, n, kCount, 70 + replay, "replay " + std::to_string(replay) + " gather in place");
    expect_scattered(share_out, n, r, kCount, 80 + replay, DType::BF16, ReduceOp::Sum,
                     "replay " + std::to_string(replay) + " scatter");
  }
#endif
}

// Blocks above the slot move in slot-sized pieces: one piece and a 3-element tail, several whole
// pieces, and bf16 pieces with a tail; then twice in a row, so the pieces of one call wrap the
// slots behind the other's. Max still goes to NCCL.
TEST(PeerCopyNccl, LargerBlocksMoveInPiecesAndMaxGoesToNccl) {
  SKIP_WITHOUT_GPU();
  Comm& world = gpu_world();
  const int n = world.size(), r = world.rank();
  PeerComm peer(world, copy_options());
  struct Case { DType dtype; int64_t count; };
  const std::vector<Case> cases = {{DType::F32, kBlockBytes / 4 + 3},
                                   {DType::F32, 5 * kBlockBytes / 4},
                                   {DType::BF16, 3 * kBlockBytes / 2 + 1001},
                                   {DType::BF16, 9 * kBlockBytes / 2 + 7}};
  uint64_t seed = 40;
  for (const Case& c : cases) {
    const std::string what = std::string(dtype_name(c.dtype)) + " count " + std::to_string(c.count);
    SCOPED_TRACE(what);
    for (int again = 0; again < 2; ++again, seed += 2) {
      Tensor whole = Tensor::empty({n * c.count}, c.dtype, world.device());
      peer.all_gather(rank_input(r, c.count, c.dtype, seed, world.device()), whole);
      expect_gathered(whole, n, c.count, seed, "gather " + what);
      Tensor share = Tensor::empty({c.count}, c.dtype, world.device());
      peer.reduce_scatter(rank_input(r, n * c.count, c.dtype, seed + 1, world.device()), share, ReduceOp::Avg);
      expect_scattered(share, n, r, c.count, seed + 1, c.dtype, ReduceOp::Avg, "scatter " + what);
    }
  }
  Tensor small = Tensor::empty({5}, DType::F32, world.device());
  Tensor input = Tensor::full({5L * n}, static_cast<double>(r), DType::F32, world.device());
  peer.reduce_scatter(input, small, ReduceOp::Max);
  EXPECT_EQ(small.to_double_vector(), std::vector<double>(5, n - 1.0));
}

// Gathers into shared buffers (PeerMemory::shared_tensor) go straight into place. Forty calls in a row
// over two buffers, whole and without this rank's block (all_gather_others_async), sizes from one
// element to above a slot, each result copied out by the compute stream before the buffer's next
// gather and all checked at the end: a peer may write a buffer only once its earlier readers here
// are done. A block left alone keeps what was there. A buffer whose tensor is gone is no longer
// shared: a new tensor where it was (the caching allocator's first pick) takes the slots, right.
// (GraphReplaysGiveTheClosedForm replays gathers into a shared buffer.)
TEST(PeerCopyNccl, SharedBuffersTakeGathersInPlace) {
  SKIP_WITHOUT_GPU();
  Comm& world = gpu_world();
  const int n = world.size(), r = world.rank();
  PeerComm peer(world, copy_options());
  const Device gpu = world.device();
  const int64_t most = 3 * kBlockBytes / 4;  // bf16 elements: 1.5 slots
  std::vector<Tensor> buffers = {peer.shared_tensor({n * most}, DType::BF16), peer.shared_tensor({n * most}, DType::BF16)};
  EXPECT_EQ(peer.shares(buffers[0]), peer.copy_usable());
  EXPECT_FALSE(peer.shares(Tensor::zeros({n * most}, DType::BF16, gpu)));
  constexpr double kLeft = -7.0;  // what a block left alone holds
  constexpr int kCalls = 40;
  std::vector<Tensor> results, inputs;
  std::vector<int64_t> counts;
  for (int k = 0; k < kCalls; ++k) {
    const int64_t count = k % 5 == 0 ? most : 1 + (k * 7919) % 40000;
    const bool others = k % 3 == 1;
    Tensor out = buffers[k % 2].narrow(0, n * count);
    out.narrow(r * count, count).fill_(kLeft);  // compute-stream order, before the gather
    inputs.push_back(rank_input(r, count, DType::BF16, 300 + k, gpu));
    CommWork work = others ? peer.all_gather_others_async(inputs.back(), out) : peer.all_gather_async(inputs.back(), out);
    work.wait();
    results.push_back(Tensor::empty({n * count}, DType::BF16, gpu));
    copy_in_stream_order(out, results.back());
    counts.push_back(count);
  }
  for (int k = 0; k < kCalls; ++k) {
    const int64_t count = counts[k];
    const std::string what = "call " + std::to_string(k);
    std::vector<double> got = results[k].to_double_vector(), want;
    for (int q = 0; q < n; ++q)
      for (int64_t i = 0; i < count; ++i)
        want.push_back(q == r && k % 3 == 1 && peer.copy_usable() ? kLeft : rank_value(q, i, 300 + k));
    EXPECT_EQ(count_mismatches(got, want, 0.0, what.c_str(), 0.0), 0);
  }
  world.synchronize();
  buffers.clear();
  results.clear();
  Tensor reused = Tensor::empty({n * most}, DType::BF16, gpu);
  EXPECT_FALSE(peer.shares(reused));
  peer.all_gather(rank_input(r, most, DType::BF16, 77, gpu), reused);
  expect_gathered(reused, n, most, 77, "a plain tensor where a shared one was");
}

// PeerMemory::gather_scratch over the copy engines: a shared buffer while one of the pool is free (none
// is handed out twice while a view of it lives), the same buffer again once its views are gone, a
// plain tensor when all are taken or while a graph is captured (no new registration then); a
// gather into each gives the closed form, whoever owns the buffer.
TEST(PeerCopyNccl, GatherScratchLendsEachSharedBufferOnce) {
  SKIP_WITHOUT_GPU();
  Comm& world = gpu_world();
  const int n = world.size(), r = world.rank();
  PeerComm peer(world, copy_options());
  const Device gpu = world.device();
  const int64_t count = 5000;
  auto gather_into = [&](Tensor& whole, uint64_t seed, const std::string& what) {
    peer.all_gather_async(rank_input(r, count, DType::BF16, seed, gpu), whole).wait();
    expect_gathered(whole, n, count, seed, what);
  };
  std::vector<Tensor> held;
  for (size_t k = 0; k < PeerComm::kGatherScratch; ++k) {
    held.push_back(peer.gather_scratch({n, count}, DType::BF16));
    EXPECT_EQ(peer.shares(held.back()), peer.copy_usable()) << "buffer " << k;
    for (size_t j = 0; j < k; ++j) EXPECT_NE(held[j].storage(), held.back().storage()) << k << " lent twice";
    gather_into(held.back(), 400 + k, "scratch " + std::to_string(k));
  }
  Tensor extra = peer.gather_scratch({n, count}, DType::BF16);
  EXPECT_FALSE(peer.shares(extra)) << "the pool has only kGatherScratch buffers";
  gather_into(extra, 500, "a plain tensor past the pool");
  const Storage* second = held[1].storage().get();
  held.erase(held.begin() + 1);
  Tensor again = peer.gather_scratch({n, count}, DType::BF16);
  if (peer.copy_usable()) {
    EXPECT_EQ(again.storage().get(), second) << "a freed buffer is lent again";
  }
  gather_into(again, 501, "a buffer lent again");
  EXPECT_FALSE(peer.shares(peer.gather_scratch({n, count + 1}, DType::BF16))) << "only a free buffer of that size";
#if NANODIST_WITH_CUDA
  // While the compute stream is captured, a free buffer is lent but no new one is registered (that
  // talks to the peers on the host): past the one free buffer, a plain tensor.
  PeerComm fresh(world, copy_options());
  Tensor lent = fresh.gather_scratch({n, count}, DType::BF16);
  const Storage* first = lent.storage().get();
  lent = Tensor();
  Tensor in_capture, new_one;
  {
    test::CapturedGraph graph(compute_stream(gpu.index), [&] {
      in_capture = fresh.gather_scratch({n, count}, DType::BF16);
      new_one = fresh.gather_scratch({n, count}, DType::BF16);
    });
  }
  if (fresh.copy_usable()) {
    EXPECT_EQ(in_capture.storage().get(), first) << "a free buffer is lent in a capture";
  }
  EXPECT_FALSE(fresh.shares(new_one)) << "no buffer is registered in a capture";
#endif
  world.synchronize();
}

}  // namespace
}  // namespace nd::dist
