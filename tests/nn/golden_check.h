// Shared by the CPU and GPU golden tests. nanodist's GPT against PyTorch: tests/golden/gpt_tiny.h5 (written by scripts/make_golden.py, which
// documents the recipe) holds a tiny GPT's weights, a batch, and PyTorch's float64 logits, loss,
// every gradient, and the losses of 10 AdamW steps. We load the weights and compare.
#pragma once
#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "nn/gpt.h"
#include "train/lr_schedule.h"
#include "train/optimizer.h"

namespace nd::golden {


inline const char* kGoldenPath = ND_SOURCE_DIR "/tests/golden/gpt_tiny.h5";

struct Array {
  std::vector<double> values;
  Shape shape;
};

// Read-only access to the golden file through the HDF5 C API; every failure is a test failure.
class GoldenFile {
 public:
  GoldenFile() {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // errors are reported by ND_CHECK, not printed
    file_ = H5Fopen(kGoldenPath, H5F_ACC_RDONLY, H5P_DEFAULT);
    ND_CHECK(file_ >= 0, "cannot open golden file " << kGoldenPath);
  }
  ~GoldenFile() { H5Fclose(file_); }
  GoldenFile(const GoldenFile&) = delete;
  GoldenFile& operator=(const GoldenFile&) = delete;

  // Any float dataset, converted to double by HDF5.
  Array read(const std::string& path) const {
    hid_t ds = open_dataset(path);
    Array out;
    out.shape = dataset_shape(ds, path);
    out.values.resize(static_cast<size_t>(shape_numel(out.shape)));
    herr_t status = H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.values.data());
    H5Dclose(ds);
    ND_CHECK(status >= 0, "cannot read " << path);
    return out;
  }

  std::vector<int32_t> read_ints(const std::string& path, Shape* shape) const {
    hid_t ds = open_dataset(path);
    *shape = dataset_shape(ds, path);
    std::vector<int32_t> out(static_cast<size_t>(shape_numel(*shape)));
    herr_t status = H5Dread(ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data());
    H5Dclose(ds);
    ND_CHECK(status >= 0, "cannot read " << path);
    return out;
  }

  double attr(const std::string& object, const std::string& name) const {
    hid_t a = H5Aopen_by_name(file_, object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT);
    ND_CHECK(a >= 0, "golden file has no attribute " << object << "@" << name);
    double value = 0;
    herr_t status = H5Aread(a, H5T_NATIVE_DOUBLE, &value);
    H5Aclose(a);
    ND_CHECK(status >= 0, "cannot read attribute " << object << "@" << name);
    return value;
  }

  // True when every link along `path` exists (H5Lexists needs the parents to exist).
  bool exists(const std::string& path) const {
    for (size_t slash = path.find('/'); ; slash = path.find('/', slash + 1)) {
      std::string prefix = path.substr(0, slash);
      if (H5Lexists(file_, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
      if (slash == std::string::npos) return true;
    }
  }

  // Number of links in group `path`.
  size_t entries(const std::string& path) const {
    H5G_info_t info;
    ND_CHECK(exists(path) && H5Gget_info_by_name(file_, path.c_str(), &info, H5P_DEFAULT) >= 0,
             "golden file has no group " << path);
    return static_cast<size_t>(info.nlinks);
  }

 private:
  hid_t open_dataset(const std::string& path) const {
    hid_t ds = exists(path) ? H5Dopen2(file_, path.c_str(), H5P_DEFAULT) : -1;
    ND_CHECK(ds >= 0, "golden file has no dataset " << path);
    return ds;
  }

  static Shape dataset_shape(hid_t ds, const std::string& path) {
    hid_t space = H5Dget_space(ds);
    int rank = H5Sget_simple_extent_ndims(space);
    ND_CHECK(rank >= 0 && rank <= 8, "bad rank " << rank << " of " << path);
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    H5Sget_simple_extent_dims(space, dims.data(), nullptr);
    H5Sclose(space);
    return Shape(dims.begin(), dims.end());
  }

  hid_t file_ = -1;
};

// |got - ref| <= rtol |ref| + atol, elementwise; reports the count and the first mismatches.
inline void expect_close(const std::vector<double>& got, const Array& ref, double rtol, double atol, const std::string& what) {
  ASSERT_EQ(got.size(), ref.values.size()) << what;
  int bad = 0;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double d = std::abs(got[i] - ref.values[i]);
    worst = std::max(worst, d / (std::abs(ref.values[i]) + atol / rtol));
    if (!(d <= rtol * std::abs(ref.values[i]) + atol)) {
      if (++bad <= 3) ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", PyTorch " << ref.values[i];
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size() << " elements off; worst error "
                    << worst << " x (|ref| + atol/rtol)";
}

inline nn::GPTConfig golden_config(const GoldenFile& f) {
  nn::GPTConfig c;
  c.n_layer = static_cast<int>(f.attr("config", "n_layer"));
  c.n_head = static_cast<int>(f.attr("config", "n_head"));
  c.n_embd = static_cast<int>(f.attr("config", "n_embd"));
  c.block_size = static_cast<int>(f.attr("config", "block_size"));
  c.vocab_size = static_cast<int>(f.attr("config", "vocab_size"));
  c.dropout = static_cast<float>(f.attr("config", "dropout"));
  c.bias = f.attr("config", "bias") != 0;
  c.use_layernorm = f.attr("config", "use_layernorm") != 0;
  c.use_residual = f.attr("config", "use_residual") != 0;
  return c;
}

// A GPT of the golden config and dtype holding the golden initial weights (from group `group`).
inline std::unique_ptr<nn::GPT> golden_model(const GoldenFile& f, DType dtype, Device device = Device::cpu(),
                                      const std::string& group = "params") {
  Generator init_gen(1);  // overwritten below: the draw does not matter
  auto model = std::make_unique<nn::GPT>(golden_config(f), init_gen, device, dtype);
  for (auto& [name, p] : model->named_parameters()) {
    Array value = f.read(group + "/" + name);
    check_shape(p.data(), value.shape, name.c_str());
    Tensor src = Tensor::from_vector(value.values, value.shape, DType::F64);
    p.data().copy_from((dtype == DType::F64 ? src : src.to(dtype)).to(device));
  }
  return model;
}

struct Batch {
  Tensor idx;
  Tensor targets;
};

inline Batch golden_batch(const GoldenFile& f, Device device = Device::cpu()) {
  Shape idx_shape, targets_shape;
  std::vector<int32_t> idx = f.read_ints("inputs", &idx_shape);
  std::vector<int32_t> targets = f.read_ints("targets", &targets_shape);
  EXPECT_NE(std::count(targets.begin(), targets.end(), -1), 0) << "the batch should exercise ignore_index";
  return {Tensor::from_vector(idx, idx_shape).to(device), Tensor::from_vector(targets, targets_shape).to(device)};
}

struct Tolerance {
  double rtol;
  double logits_atol;  // logits are O(1): their absolute rounding error sets the floor
  double grads_atol;   // gradients are O(1e-4..0.3) here: a floor far below their size
};

// Logits, loss and every gradient of one forward/backward pass, |got - ref| <= rtol |ref| + atol.
inline void check_forward_backward(DType dtype, const Tolerance& tol, Device device = Device::cpu()) {
  GoldenFile f;
  auto model = golden_model(f, dtype, device);
  Batch batch = golden_batch(f, device);

  // Same parameters, same names, as the PyTorch model.
  auto params = model->named_parameters();
  EXPECT_EQ(f.entries("params"), params.size()) << "PyTorch and nanodist disagree on the parameters";
  for (auto& [name, p] : params) EXPECT_TRUE(f.exists("params/" + name)) << name << " is not in PyTorch's model";

  Generator dropout_gen(7);
  nn::GPT::Output out = model->forward(batch.idx, &batch.targets, dropout_gen);
  expect_close(out.logits.data().to_double_vector(), f.read("logits"), tol.rtol, tol.logits_atol, "logits");
  expect_close({out.loss.data().item()}, f.read("loss"), tol.rtol, 0.0, "loss");

  out.loss.backward();
  for (auto& [name, p] : params) {
    ASSERT_TRUE(p.has_grad()) << name << " got no gradient";
    expect_close(p.grad().to_double_vector(), f.read("grads/" + name), tol.rtol, tol.grads_atol, "grad of " + name);
  }
}

// The trainer's AdamW, LR schedule and clipping against torch.optim.AdamW over 10 steps on one
// batch (recipe in scripts/make_golden.py), on `device`, in f32.
inline void check_ten_adamw_steps(Device device) {
  GoldenFile f;
  auto model = golden_model(f, DType::F32, device);
  Batch batch = golden_batch(f, device);
  train::AdamWOptions options;
  options.beta1 = f.attr("train", "beta1");
  options.beta2 = f.attr("train", "beta2");
  options.eps = f.attr("train", "eps");
  options.weight_decay = f.attr("train", "weight_decay");
  train::AdamW adamw(model->named_parameters(), options);
  train::LrSchedule schedule;
  schedule.lr = f.attr("train", "max_lr");
  schedule.min_lr = f.attr("train", "min_lr");
  schedule.warmup_iters = static_cast<int>(f.attr("train", "warmup_iters"));
  schedule.lr_decay_iters = static_cast<int>(f.attr("train", "lr_decay_iters"));
  const double grad_clip = f.attr("train", "grad_clip");
  const int steps = static_cast<int>(f.attr("train", "steps"));

  Array ref_norms = f.read("train/norms");
  int clipped = static_cast<int>(std::count_if(ref_norms.values.begin(), ref_norms.values.end(),
                                               [&](double n) { return n > grad_clip; }));
  EXPECT_GT(clipped, 0) << "the golden run should exercise clipping";
  EXPECT_LT(clipped, steps) << "the golden run should also have unclipped steps";

  std::vector<double> losses, lrs, norms;
  Generator dropout_gen(7);
  for (int it = 0; it < steps; ++it) {
    double lr = schedule.at(it);
    model->zero_grad();
    nn::GPT::Output out = model->forward(batch.idx, &batch.targets, dropout_gen);
    losses.push_back(out.loss.data().item());
    out.loss.backward();
    norms.push_back(adamw.step(lr, grad_clip));
    lrs.push_back(lr);
  }
  expect_close(lrs, f.read("train/lrs"), 1e-12, 0.0, "learning rates");
  expect_close(norms, ref_norms, 1e-5, 0.0, "gradient norms before clipping");
  expect_close(losses, f.read("train/losses"), 1e-5, 0.0, "losses");

  // The weights after the 10th update. Adam's step lr m/sqrt(v) does not shrink with the gradient,
  // so an element whose gradient is tiny (hence relatively noisy in f32) still moves by ~lr = 1e-2
  // with a slightly different direction: the absolute floor is 1e-5, a thousandth of one step (a
  // wrong bias correction or weight decay is off by 1e-4 or more). The key third of c_attn.bias has
  // an exactly zero gradient (a constant added to a row of scores leaves softmax unchanged), so
  // Adam turns rounding noise (~1e-10 in f32) into updates up to ~1e-4: it gets 1e-3.
  const int64_t C = model->config().n_embd;
  for (auto& [name, p] : model->named_parameters()) {
    std::vector<double> got = p.data().to_double_vector();
    Array ref = f.read("train/final_params/" + name);
    if (name.find("attn.c_attn.bias") != std::string::npos) {
      for (int64_t i = C; i < 2 * C; ++i) {
        EXPECT_NEAR(got[i], ref.values[i], 1e-3) << name << "[" << i << "] (key bias)";
        got[i] = ref.values[i];
      }
    }
    expect_close(got, ref, 1e-4, 1e-5, "after 10 steps, " + name);
  }
}


}  // namespace nd::golden
