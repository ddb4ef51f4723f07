// The f16 emulation of f16_emulation.h: widen, run the f32 reference kernel, round once.
#include "kernels/cpu/f16_emulation.h"

#include <vector>

#include "kernels/cpu/add.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/bias_add.h"
#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/dropout.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/gelu.h"
#include "kernels/cpu/layernorm.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/random_fill.h"
#include "kernels/cpu/vocab_parallel_cross_entropy.h"
#include "kernels/cpu/vocab_parallel_embedding.h"

namespace nd::cpu_f16 {

namespace {

// n f16 values as f32; a null source stays null (an absent bias).
class Wide {
 public:
  Wide(const f16* src, int64_t n) : values_(src ? static_cast<size_t>(n) : 0), null_(src == nullptr) {
    for (int64_t i = 0; src && i < n; ++i) values_[static_cast<size_t>(i)] = f16_to_f32(src[i]);
  }
  float* get() { return null_ ? nullptr : values_.data(); }
  // Rounds the values into dst (n of them), nearest even.
  void round_into(f16* dst) const {
    for (size_t i = 0; dst && !null_ && i < values_.size(); ++i) dst[i] = f32_to_f16(values_[i]);
  }

 private:
  std::vector<float> values_;
  bool null_;
};

// A gradient destination in f32 standing in for an f16 one: what the f16 buffer holds when the
// kernel adds to it, rounded back once after the kernel's sum.
class WideGrad {
 public:
  WideGrad(GradDest<f16> dest, int64_t n)
      : dest_(dest), values_(dest.ptr && dest.accumulate ? dest.ptr : nullptr, n) {
    if (dest.ptr && !dest.accumulate) scratch_.resize(static_cast<size_t>(n));
  }
  GradDest<float> get() {
    if (!dest_.ptr) return {};
    return {dest_.accumulate ? values_.get() : scratch_.data(), dest_.accumulate};
  }
  void commit() {
    if (!dest_.ptr) return;
    if (dest_.accumulate) {
      values_.round_into(dest_.ptr);
    } else {
      for (size_t i = 0; i < scratch_.size(); ++i) dest_.ptr[i] = f32_to_f16(scratch_[i]);
    }
  }

 private:
  GradDest<f16> dest_;
  Wide values_;
  std::vector<float> scratch_;
};

// An f32 buffer of n values for an f16 output.
struct Out {
  explicit Out(int64_t n) : values(static_cast<size_t>(n)) {}
  float* get() { return values.data(); }
  void round_into(f16* dst) const {
    for (size_t i = 0; dst && i < values.size(); ++i) dst[i] = f32_to_f16(values[i]);
  }
  std::vector<float> values;
};

}  // namespace

void add_forward(const f16* a, const f16* b, f16* out, int64_t n) {
  Wide wa(a, n), wb(b, n);
  Out o(n);
  cpu::add_forward(wa.get(), wb.get(), o.get(), n);
  o.round_into(out);
}

void add_backward(const f16* dout, GradDest<f16> da, GradDest<f16> db, int64_t n) {
  Wide d(dout, n);
  WideGrad ga(da, n), gb(db, n);
  cpu::add_backward(d.get(), ga.get(), gb.get(), n);
  ga.commit();
  gb.commit();
}

void bias_add_forward(const f16* x, const f16* b, f16* out, int64_t M, int64_t N) {
  Wide wx(x, M * N), wb(b, N);
  Out o(M * N);
  cpu::bias_add_forward(wx.get(), wb.get(), o.get(), M, N);
  o.round_into(out);
}

void bias_add_backward(const f16* dout, f16* db, int64_t M, int64_t N) {
  Wide d(dout, M * N), g(db, N);  // db is added to
  cpu::bias_add_backward(d.get(), g.get(), M, N);
  g.round_into(db);
}

// The loss and its seed stay f32, as on the GPU: only the logits and their gradient are f16.
void cross_entropy_forward(const f16* logits, const int32_t* targets, float* loss, float* row_lse, float* count,
                           int64_t N, int64_t Vp, int64_t V) {
  Wide x(logits, N * Vp);
  cpu::cross_entropy_forward(x.get(), targets, loss, row_lse, count, N, Vp, V);
}

void cross_entropy_backward(const f16* logits, const int32_t* targets, const float* row_lse, const float* count,
                            const float* dloss, GradDest<f16> dlogits, int64_t N, int64_t Vp, int64_t V) {
  Wide x(logits, N * Vp);
  WideGrad g(dlogits, N * Vp);
  cpu::cross_entropy_backward(x.get(), targets, row_lse, count, dloss, g.get(), N, Vp, V);
  g.commit();
}

void cross_entropy_forward_with_grad(const f16* logits, const int32_t* targets, const float* dloss, float* loss,
                                     float* row_lse, float* count, f16* dlogits, int64_t N, int64_t Vp, int64_t V) {
  Wide x(logits, N * Vp);  // copied first: dlogits may be logits
  Out g(N * Vp);
  cpu::cross_entropy_forward_with_grad(x.get(), targets, dloss, loss, row_lse, count, g.get(), N, Vp, V);
  g.round_into(dlogits);
}

void cross_entropy_rescale_grad(const float* dloss, const float* announced, f16* dlogits, int64_t n) {
  Wide g(dlogits, n);
  cpu::cross_entropy_rescale_grad(dloss, announced, g.get(), n);
  g.round_into(dlogits);
}

void dropout_forward(const f16* x, f16* out, int64_t n, float p, const PhiloxCounters& rng) {
  Wide wx(x, n);
  Out o(n);
  cpu::dropout_forward(wx.get(), o.get(), n, p, rng);
  o.round_into(out);
}

void dropout_backward(const f16* dout, GradDest<f16> dx, int64_t n, float p, const PhiloxCounters& rng) {
  Wide d(dout, n);
  WideGrad g(dx, n);
  cpu::dropout_backward(d.get(), g.get(), n, p, rng);
  g.commit();
}

void embedding_forward(const int32_t* idx, const f16* wte, const f16* wpe, f16* out, int64_t B, int64_t S, int64_t C,
                       int64_t V) {
  Wide te(wte, V * C), pe(wpe, S * C);  // positions 0..S-1 are read
  Out o(B * S * C);
  cpu::embedding_forward(idx, te.get(), pe.get(), o.get(), B, S, C, V);
  o.round_into(out);
}

void embedding_backward(const int32_t* idx, const f16* dout, GradDest<f16> dwte, GradDest<f16> dwpe, int64_t B,
                        int64_t S, int64_t C, int64_t V, int64_t P) {
  Wide d(dout, B * S * C);
  WideGrad gte(dwte, V * C), gpe(dwpe, P * C);
  cpu::embedding_backward(idx, d.get(), gte.get(), gpe.get(), B, S, C, V, P);
  gte.commit();
  gpe.commit();
}

void gelu_forward(const f16* x, f16* out, int64_t n) {
  Wide wx(x, n);
  Out o(n);
  cpu::gelu_forward(wx.get(), o.get(), n);
  o.round_into(out);
}

void gelu_backward(const f16* x, const f16* dout, GradDest<f16> dx, int64_t n) {
  Wide wx(x, n), d(dout, n);  // copied first: dx may be dout
  WideGrad g(dx, n);
  cpu::gelu_backward(wx.get(), d.get(), g.get(), n);
  g.commit();
}

void layernorm_forward(const f16* x, const f16* w, const f16* b, f16* out, float* mean, float* rstd, int64_t N,
                       int64_t C, float eps) {
  Wide wx(x, N * C), ww(w, C), wb(b, C);
  Out o(N * C);
  cpu::layernorm_forward(wx.get(), ww.get(), wb.get(), o.get(), mean, rstd, N, C, eps);
  o.round_into(out);
}

void layernorm_backward(const f16* dout, const f16* x, const f16* w, const float* mean, const float* rstd,
                        GradDest<f16> dx, GradDest<f16> dw, GradDest<f16> db, int64_t N, int64_t C) {
  Wide d(dout, N * C), wx(x, N * C), ww(w, C);
  WideGrad gx(dx, N * C), gw(dw, C), gb(db, C);
  cpu::layernorm_backward(d.get(), wx.get(), ww.get(), mean, rstd, gx.get(), gw.get(), gb.get(), N, C);
  gx.commit();
  gw.commit();
  gb.commit();
}

void linear_forward(const f16* x, const f16* w, const f16* b, f16* out, int64_t M, int64_t N, int64_t K) {
  Wide wx(x, M * K), ww(w, N * K), wb(b, N);
  Out o(M * N);
  cpu::linear_forward(wx.get(), ww.get(), wb.get(), o.get(), M, N, K);
  o.round_into(out);
}

void linear_backward(const f16* dout, const f16* x, const f16* w, GradDest<f16> dx, GradDest<f16> dw,
                     GradDest<f16> db, int64_t M, int64_t N, int64_t K) {
  Wide d(dout, M * N), wx(x, M * K), ww(w, N * K);
  WideGrad gx(dx, M * K), gw(dw, N * K), gb(db, N);
  cpu::linear_backward(d.get(), wx.get(), ww.get(), gx.get(), gw.get(), gb.get(), M, N, K);
  gx.commit();
  gw.commit();
  gb.commit();
}

// As the GPU's unfused path: pre rounded to f16, then the GELU of the rounded pre.
bool linear_gelu_forward(const f16* x, const f16* w, const f16* b, f16* out, f16* pre, int64_t M, int64_t N,
                         int64_t K) {
  linear_forward(x, w, b, pre, M, N, K);
  gelu_forward(pre, out, M * N);
  return false;
}

// As the GPU does it: the product rounded into dpre, the GELU gradient in place, db from dpre.
void linear_dgelu_backward(const f16* dout, const f16* w, const f16* pre, f16* dpre, GradDest<f16> db, int64_t M,
                           int64_t N, int64_t K) {
  Wide d(dout, M * N), ww(w, N * K);
  Out product(M * K);
  cpu::linear_backward(d.get(), static_cast<const float*>(nullptr), ww.get(), GradDest<float>{product.get(), false},
                       GradDest<float>{}, GradDest<float>{}, M, N, K);
  product.round_into(dpre);
  gelu_backward(pre, dpre, GradDest<f16>{dpre, false}, M * K);
  if (db.ptr == nullptr) return;
  Wide g(dpre, M * K);
  WideGrad gb(db, K);
  GradDest<float> sums = gb.get();
  for (int64_t k = 0; k < K; ++k) {
    float s = 0.0f;
    for (int64_t m = 0; m < M; ++m) s += g.get()[m * K + k];
    sums.ptr[k] = sums.accumulate ? sums.ptr[k] + s : s;
  }
  gb.commit();
}

void normal_fill(f16* out, const ElementSlice& slice, const PhiloxCounters& rng, double mean, double std) {
  Out o(slice.size());
  cpu::normal_fill(o.get(), slice, rng, mean, std);  // rounded to f32, then to f16, as the GPU does
  o.round_into(out);
}

void attention_forward(const f16* qkv, f16* out, float* lse, int64_t B, int64_t T, int64_t C, int64_t NH,
                       const AttentionDropout& dropout) {
  Wide x(qkv, B * T * 3 * C);
  Out o(B * T * C);
  cpu::attention_forward(x.get(), o.get(), lse, B, T, C, NH, dropout);
  o.round_into(out);
}

void attention_backward(const f16* dout, const f16* qkv, const f16* out, const float* lse, GradDest<f16> dqkv,
                        int64_t B, int64_t T, int64_t C, int64_t NH, const AttentionDropout& dropout) {
  Wide d(dout, B * T * C), x(qkv, B * T * 3 * C), o(out, B * T * C);
  WideGrad g(dqkv, B * T * 3 * C);
  cpu::attention_backward(d.get(), x.get(), o.get(), lse, g.get(), B, T, C, NH, dropout);
  g.commit();
}

void vocab_parallel_ce_local_stats(const f16* logits, const int32_t* targets, float* row_max, float* stats, int64_t N,
                                   int64_t Vl, int64_t valid, int64_t vocab_start) {
  Wide x(logits, N * Vl);
  cpu::vocab_parallel_ce_local_stats(x.get(), targets, row_max, stats, N, Vl, valid, vocab_start);
}

void vocab_parallel_ce_rescale(const float* row_max, float* stats, int64_t N) {
  cpu::vocab_parallel_ce_rescale(row_max, stats, N);
}

void vocab_parallel_ce_loss(const float* row_max, const float* stats, const int32_t* targets, float* loss,
                            float* row_lse, float* count, int64_t N, int64_t V) {
  cpu::vocab_parallel_ce_loss(row_max, stats, targets, loss, row_lse, count, N, V);
}

void vocab_parallel_ce_backward(const f16* logits, const int32_t* targets, const float* row_lse, const float* count,
                                const float* dloss, f16* dlogits, int64_t N, int64_t Vl, int64_t valid,
                                int64_t vocab_start, bool accumulate) {
  if (dlogits == nullptr) return;
  Wide x(logits, N * Vl);
  WideGrad g(GradDest<f16>{dlogits, accumulate}, N * Vl);
  GradDest<float> dest = g.get();
  cpu::vocab_parallel_ce_backward(x.get(), targets, row_lse, count, dloss, dest.ptr, N, Vl, valid, vocab_start,
                                  accumulate);
  g.commit();
}

void vocab_parallel_embedding_forward(const int32_t* idx, const f16* wte, f16* out, int64_t n, int64_t C,
                                      int64_t vocab_start, int64_t Vl) {
  Wide te(wte, Vl * C);
  Out o(n * C);
  cpu::vocab_parallel_embedding_forward(idx, te.get(), o.get(), n, C, vocab_start, Vl);
  o.round_into(out);
}

void vocab_parallel_embedding_backward(const int32_t* idx, const f16* dout, f16* dwte, int64_t n, int64_t C,
                                       int64_t vocab_start, int64_t Vl) {
  if (dwte == nullptr) return;
  Wide d(dout, n * C), g(dwte, Vl * C);  // dwte is added to
  cpu::vocab_parallel_embedding_backward(idx, d.get(), g.get(), n, C, vocab_start, Vl);
  g.round_into(dwte);
}

}  // namespace nd::cpu_f16
