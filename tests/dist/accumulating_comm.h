// A comm that adds its reduce-scatter into the output (PeerMemory::reduce_scatter_accumulates, as
// PeerComm's copy engines do on the GPU) on any backend, for ZeRO's tests on the CPU: the wrapped comm
// reduce-scatters into a temporary, which is then added to the output element by element, out + sum,
// one rounding: the order of the copy engines' sum kernel (kernels/cuda/sum_blocks.h) and the bits of
// the landing path it replaces. It counts the calls, so a test can tell the path was taken. Its other
// answers are those of a comm without peer memory.
#pragma once
#include "dist/comm/forwarding_comm.h"
#include "dist/comm/peer_memory.h"

namespace nd::test {

class AccumulatingComm : public dist::ForwardingComm, public dist::PeerMemory {
 public:
  explicit AccumulatingComm(dist::Comm& inner) : ForwardingComm(inner) {}

  dist::PeerMemory* peer_memory() override { return this; }

  bool reduce_scatter_accumulates(dist::ReduceOp op, DType in, DType out) override {
    return op != dist::ReduceOp::Max && in == DType::F32 && out == DType::F32;
  }
  dist::CommWork reduce_scatter_accumulate_async(const Tensor& input, Tensor& output, dist::ReduceOp op) override {
    ND_CHECK(reduce_scatter_accumulates(op, input.dtype(), output.dtype()),
             "AccumulatingComm: " << input.str() << " into " << output.str());
    Tensor result = Tensor::empty(output.shape(), DType::F32, output.device());
    inner_.reduce_scatter_async(input, result, op).wait();
    float* out = output.data<float>();
    const float* sum = result.data<float>();
    for (int64_t i = 0; i < output.numel(); ++i) out[i] = out[i] + sum[i];
    ++accumulated_;
    return dist::CommWork();
  }
  int64_t accumulated() const { return accumulated_; }

  bool reduce_scatter_widens(dist::ReduceOp) override { return false; }
  dist::CommWork all_gather_others_async(const Tensor& input, Tensor& output) override {
    return all_gather_async(input, output);
  }
  Tensor shared_tensor(const Shape& shape, DType dtype) override { return Tensor::zeros(shape, dtype, device()); }
  bool shares(const Tensor&) const override { return false; }
  Tensor gather_scratch(const Shape& shape, DType dtype) override { return Tensor::empty(shape, dtype, device()); }
  bool reduce_scatter_in_halves(const Tensor&, dist::ReduceOp) override { return false; }
  ScatterTicket reduce_scatter_send(const Tensor&, const Tensor&, dist::ReduceOp) override {
    ND_FAIL("AccumulatingComm has no two-half reduce-scatter");
  }
  dist::CommWork reduce_scatter_finish(const ScatterTicket&, const Tensor&, Tensor&, dist::ReduceOp) override {
    ND_FAIL("AccumulatingComm has no two-half reduce-scatter");
  }

 private:
  int64_t accumulated_ = 0;
};

}  // namespace nd::test
