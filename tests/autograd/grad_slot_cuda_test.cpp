// The GPU kernels' two ways of writing a gradient, against the CPU reference for every op: the
// first contribution overwrites its buffer (here a DDP-style external buffer full of NaN, zeroed),
// the next one adds to it; a tied embedding and head sums both uses. Also: an out-of-range
// cross-entropy target is recorded on the device and raised by ops::check_recorded_token_ids.
#include <cmath>

#include "autograd/op_test_util.h"
#include "autograd/ops.h"
#include "kernels/cuda_test_util.h"

namespace nd::test {
namespace {

// Runs `op` twice forward and backward on the CPU (f32, fresh gradients) and on cuda:0 (dtype,
// gradients in NaN-filled buffers after zero_grad) from the same inputs and output gradient, and
// compares every gradient after the first backward (overwritten) and after the second (added).
void check_first_then_added(const std::string& name, const DeviceOp& op, const std::vector<Tensor>& inputs,
                            const std::vector<bool>& wants, DType dtype, Generator& gen) {
  SCOPED_TRACE(name + " " + dtype_name(dtype));
  Tolerance tol = tolerance_for(dtype);
  std::vector<Variable> cpu, gpu;
  for (size_t i = 0; i < inputs.size(); ++i) {
    cpu.emplace_back(inputs[i].clone(), wants[i]);
    gpu.emplace_back(on_gpu(inputs[i], dtype), wants[i]);
    if (!wants[i]) continue;
    gpu.back().set_grad(Tensor::full(inputs[i].shape(), std::nan(""), dtype, Device::cuda(0)));
    gpu.back().zero_grad();
  }
  Tensor grad_out;
  for (int pass = 1; pass <= 2; ++pass) {
    Variable cpu_out = op(cpu, Device::cpu());
    if (pass == 1) grad_out = random_input(cpu_out.shape(), gen, dtype);
    cpu_out.backward(grad_out);
    Variable gpu_out = op(gpu, Device::cuda(0));
    gpu_out.backward(on_gpu(grad_out, gpu_out.dtype()));  // a loss is f32: grad_out's values fit
    for (size_t i = 0; i < inputs.size(); ++i)
      if (wants[i])
        expect_close(gpu[i].grad(), cpu[i].grad(), tol.atol_rel, tol.rtol,
                     name + " pass " + std::to_string(pass) + " grad of input " + std::to_string(i));
  }
}

void check_every_op(DType dtype) {
  Generator gen(test_seed());
  auto run = [&](const std::string& name, const DeviceOp& op, const std::vector<Tensor>& inputs,
                 const std::vector<bool>& wants) { check_first_then_added(name, op, inputs, wants, dtype, gen); };
  run("linear", [](const std::vector<Variable>& v, Device) { return ops::linear(v[0], v[1], v[2]); },
      {random_input({3, 5, 32}, gen, dtype), random_input({48, 32}, gen, dtype, 0.2),
       random_input({48}, gen, dtype)},
      {true, true, true});
  run("layernorm", [](const std::vector<Variable>& v, Device) { return ops::layernorm(v[0], v[1], v[2]); },
      {random_input({6, 64}, gen, dtype), random_input({64}, gen, dtype), random_input({64}, gen, dtype)},
      {true, true, true});
  run("gelu", [](const std::vector<Variable>& v, Device) { return ops::gelu(v[0]); },
      {random_input({1003}, gen, dtype)}, {true});
  run("add", [](const std::vector<Variable>& v, Device) { return ops::add(v[0], v[1]); },
      {random_input({5, 40}, gen, dtype), random_input({5, 40}, gen, dtype)}, {true, true});
  run("add of one input to itself", [](const std::vector<Variable>& v, Device) { return ops::add(v[0], v[0]); },
      {random_input({999}, gen, dtype)}, {true});
  run("dropout",
      [](const std::vector<Variable>& v, Device) {
        Generator mask(5, 3);
        return ops::dropout(v[0], 0.25f, mask, true);
      },
      {random_input({8, 33}, gen, dtype)}, {true});
  run("attention",
      [](const std::vector<Variable>& v, Device) {
        Generator mask(6, 1);
        return ops::attention(v[0], 2, 0.1f, &mask, true);
      },
      {random_input({2, 37, 3 * 128}, gen, dtype)}, {true});
  std::vector<int32_t> ids(2 * 9);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 7) % 11);
  Tensor idx = Tensor::from_vector(ids, {2, 9}), idx_gpu = idx.to(Device::cuda(0));
  // wpe has 12 positions for a sequence of 9: its last rows get zero.
  run("embedding",
      [&](const std::vector<Variable>& v, Device d) { return ops::embedding(d.is_cpu() ? idx : idx_gpu, v[0], v[1]); },
      {random_input({13, 32}, gen, dtype), random_input({12, 32}, gen, dtype)}, {true, true});
  run("tied embedding and head",
      [&](const std::vector<Variable>& v, Device d) {
        return ops::linear(ops::embedding(d.is_cpu() ? idx : idx_gpu, v[0], v[1]), v[0], Variable());
      },
      {random_input({13, 32}, gen, dtype), random_input({9, 32}, gen, dtype)}, {true, true});
  std::vector<int32_t> t(3 * 4);
  for (size_t i = 0; i < t.size(); ++i) t[i] = i % 5 == 2 ? -1 : static_cast<int32_t>((i * 13) % 60);
  Tensor targets = Tensor::from_vector(t, {3, 4}), targets_gpu = targets.to(Device::cuda(0));
  run("cross_entropy",
      [&](const std::vector<Variable>& v, Device d) {
        return ops::cross_entropy(v[0], d.is_cpu() ? targets : targets_gpu, 60);
      },
      {random_input({3, 4, 64}, gen, dtype, 3.0)}, {true});
}

TEST(GradSlotCuda, F32) {
  ND_SKIP_WITHOUT_GPU();
  check_every_op(DType::F32);
}

TEST(GradSlotCuda, Bf16) {
  ND_SKIP_WITHOUT_GPU();
  check_every_op(DType::BF16);
}

TEST(GradSlotCuda, BadCrossEntropyTargetIsRaisedByTheCheck) {
  ND_SKIP_WITHOUT_GPU();
  Device gpu = Device::cuda(0);
  Variable logits(Tensor::zeros({1, 3, 8}, DType::F32, gpu), true);
  Tensor targets = Tensor::from_vector(std::vector<int32_t>{1, 9, -1}, {1, 3}).to(gpu);
  Variable loss = ops::cross_entropy(logits, targets, 6);  // no host sync: nothing raised yet
  loss.backward();
  expect_error_mentioning([&] { ops::check_recorded_token_ids(gpu); },
                          {"cross_entropy", "target 9", "row 1", "[0, 6)"});
  EXPECT_NO_THROW(ops::check_recorded_token_ids(gpu));  // raised once, then cleared
  // The CPU raises at once, in the same words.
  expect_error_mentioning([&] { ops::cross_entropy(Variable(Tensor::zeros({1, 3, 8}, DType::F32)),
                                                   targets.to(Device::cpu()), 6); },
                          {"cross_entropy", "target 9", "row 1", "[0, 6)"});
}

}  // namespace
}  // namespace nd::test
