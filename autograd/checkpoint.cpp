// ops::checkpoint: the forward without recording, and a node whose backward reruns the region with
// recording and runs a nested backward through the rerun. The nested graph is joined to the outer
// one at both ends without copies, so its gradients flow as the recorded region's would: an entry
// node passes the input's gradient on to the outer input (taking its buffer where the input has none
// yet, as a residual add does), and a tail node hands the outer gradient itself to the rerun's output.
#include "autograd/checkpoint.h"

#include <utility>

#include "autograd/parallel_ops.h"
#include "autograd/without_forward.h"

namespace nd::ops {

namespace {

// The parameters' hooks, off while the nested backward runs: their gradients are final only once
// the outer engine has run the checkpoint node, which then fires each hook once.
class HooksOff {
 public:
  HooksOff(std::vector<Variable>& vars, size_t first) : vars_(vars), first_(first) {
    for (size_t i = first_; i < vars_.size(); ++i) saved_.push_back(std::move(vars_[i].autograd()->grad_hook));
    for (size_t i = first_; i < vars_.size(); ++i) vars_[i].autograd()->grad_hook = nullptr;
  }
  ~HooksOff() {
    for (size_t i = first_; i < vars_.size(); ++i) vars_[i].autograd()->grad_hook = std::move(saved_[i - first_]);
  }
  HooksOff(const HooksOff&) = delete;
  HooksOff& operator=(const HooksOff&) = delete;

 private:
  std::vector<Variable>& vars_;
  size_t first_;
  std::vector<std::function<void(Variable&)>> saved_;
};

// The rerun's input: outer's value, as an op output (not a leaf) whose gradient goes on to `outer`,
// so the rerun's ops treat it as they treat the recorded region's input. A constant when outer
// needs no gradient. `outer` must outlive the nested backward (it is the checkpoint node's input).
Variable region_entry(Variable& outer) {
  if (!outer.requires_grad()) return Variable(outer.data(), false);
  Variable anchor(Tensor(), /*requires_grad=*/true);  // a leaf that only makes the entry recorded
  return make_result(outer.data(), {anchor},
                     [&outer](const Tensor& grad_out, std::vector<Variable>&) { pass_gradient(grad_out, outer); });
}

// y as the root of the nested backward, borrowing the gradient it is seeded with instead of copying
// it (a copy is a host sync on the GPU outside capture): that gradient is the checkpoint output's,
// which the outer engine drops once the checkpoint node returns, so the rerun may take its buffer.
// Neither y's value nor the tail's is read (y may have none: a region that skipped its tail).
Variable borrowing_tail(const Variable& y) {
  Variable tail = make_result_without_value(ValueInfo{y.shape(), y.dtype(), y.device()}, {y.without_data()},
                                            [](const Tensor& grad_out, std::vector<Variable>& in) {
                                              pass_gradient(grad_out, in[0]);
                                            });
  tail.grad_fn()->only_reads_grad_out = true;
  return tail;
}

}  // namespace

Variable checkpoint(const Region& region, const Variable& x, const std::vector<Variable>& params, Generator& gen) {
  // Copied into the node: it reruns after the caller's region is gone.
  const TailSkippingRegion whole = [region](const Variable& in, Generator& g, bool) { return region(in, g); };
  return checkpoint(whole, x, params, gen);
}

Variable checkpoint(const TailSkippingRegion& region, const Variable& x, const std::vector<Variable>& params,
                    Generator& gen) {
  bool records = grad_enabled() && x.requires_grad();
  for (const Variable& p : params) records = records || p.requires_grad();
  if (!records) return region(x, gen, /*output_read=*/true);
  const Generator start = gen;  // the rerun draws from here
  Tensor out;
  {
    NoGradGuard not_recorded;
    out = region(x, gen, /*output_read=*/true).data();
  }
  const uint64_t end_offset = gen.offset();
  std::vector<Variable> inputs;
  inputs.reserve(params.size() + 1);
  inputs.push_back(x);  // the one activation the region keeps
  for (const Variable& p : params) inputs.push_back(p);
  return make_result(out, std::move(inputs), [region, start, end_offset](const Tensor& grad_out,
                                                                         std::vector<Variable>& in) {
    ND_CHECK(grad_enabled(), "checkpoint: backward under a NoGradGuard cannot rerun the region with recording");
    HooksOff hooks_off(in, 1);
    Generator replay = start;
    Variable y = region(region_entry(in[0]), replay, /*output_read=*/false);
    ND_CHECK(replay.offset() == end_offset, "checkpoint: the rerun drew " << replay.offset() - start.offset()
                                                                          << " random counters, the forward "
                                                                          << end_offset - start.offset());
    if (y.requires_grad()) borrowing_tail(y).backward(grad_out);
  });
}

}  // namespace nd::ops
