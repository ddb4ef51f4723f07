// A comm that adds its reduce-scatter into the output (Comm::reduce_scatter_accumulates, as PeerComm's
// copy engines do on the GPU) on any backend, for ZeRO's tests on the CPU: the wrapped comm
// reduce-scatters into a temporary, which is then added to the output element by element, out + sum,
// one rounding: the order of the copy engines' sum kernel (kernels/cuda/sum_blocks.h) and the bits of
// the landing path it replaces. It counts the calls, so a test can tell the path was taken.
#pragma once
#include "dist/comm/forwarding_comm.h"

namespace nd::test {

class AccumulatingComm : public dist::ForwardingComm {
 public:
  explicit AccumulatingComm(dist::Comm& inner) : ForwardingComm(inner) {}

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

 private:
  int64_t accumulated_ = 0;
};

}  // namespace nd::test
