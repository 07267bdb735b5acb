// Reference kernels of the CPU backend, one per op of model/ops.h, with exactly
// the semantics documented there. Each is a template over the element type Real:
// the backend instantiates float, the finite-difference tests double. Buffers that
// the Ops interface types as float* (layernorm mean/rstd, attention lse, losses,
// optimizer state) are Real* here too, so a double instantiation is double
// throughout. Shapes: N = B*T rows of C channels, row-major, no padding.
//
// All loops run in a fixed order on one thread, so equal inputs give bit-identical
// outputs. Row statistics (layernorm moments, softmax sums, parameter-gradient
// column sums) accumulate in double; the O(N*C) elementwise work stays in Real.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/cpu/cpu_matmul.h"
#include "model/ops.h"

namespace zt::cpu {

constexpr double kLayerNormEps = 1e-5;

// ---- contiguous vector primitives ----
// gcc -O2 only vectorizes loops whose trip count is a known multiple of the vector
// width, so these run fixed chunks of 8 plus a scalar tail. dot keeps 8 partial
// sums (one per lane, combined in a fixed order): vectorizable without reordering
// any single sum.
constexpr int kChunk = 8;

// y[0..n) += a * x[0..n)
template <typename Real>
inline void axpy(Real* __restrict y, Real a, const Real* __restrict x, int n) {
  int j = 0;
  for (; j + kChunk <= n; j += kChunk) {
    for (int u = 0; u < kChunk; ++u) y[j + u] += a * x[j + u];
  }
  for (; j < n; ++j) y[j] += a * x[j];
}

template <typename Real>
inline Real dot(const Real* __restrict x, const Real* __restrict y, int n) {
  Real part[kChunk] = {};
  int j = 0;
  for (; j + kChunk <= n; j += kChunk) {
    for (int u = 0; u < kChunk; ++u) part[u] += x[j + u] * y[j + u];
  }
  Real s = 0;
  for (int u = 0; u < kChunk; ++u) s += part[u];
  for (; j < n; ++j) s += x[j] * y[j];
  return s;
}

// sum[0..n) += x[0..n), widening to double (column sums over rows).
template <typename Real>
inline void accumulate(double* __restrict sum, const Real* __restrict x, int n) {
  int j = 0;
  for (; j + kChunk <= n; j += kChunk) {
    for (int u = 0; u < kChunk; ++u) sum[j + u] += x[j + u];
  }
  for (; j < n; ++j) sum[j] += x[j];
}

// ---- encoder ----
// out[b,t,:] = wte[tokens[b,t],:] + wpe[t,:]; wte null: out += wpe, wpe null:
// out = wte[tokens]. Backward walks (b, t) in order and adds each dout row into
// its token's dwte row and position's dwpe row (either may be null); repeated
// tokens therefore accumulate in a fixed order. Token ids are trusted to be < V.
template <typename Real>
void encoder_forward(Real* out, const int* tokens, const Real* wte, const Real* wpe, int B, int T,
                     int C) {
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      size_t row = static_cast<size_t>(b) * T + t;
      Real* o = out + row * C;
      if (wte) {
        const Real* e = wte + static_cast<size_t>(tokens[row]) * C;
        for (int c = 0; c < C; ++c) o[c] = e[c];
      }
      if (wpe) {
        const Real* p = wpe + static_cast<size_t>(t) * C;
        for (int c = 0; c < C; ++c) o[c] += p[c];
      }
    }
  }
}

template <typename Real>
void encoder_backward(Real* dwte, Real* dwpe, const Real* dout, const int* tokens, int B, int T,
                      int C) {
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      size_t row = static_cast<size_t>(b) * T + t;
      const Real* d = dout + row * C;
      if (dwte) axpy(dwte + static_cast<size_t>(tokens[row]) * C, Real(1), d, C);
      if (dwpe) axpy(dwpe + static_cast<size_t>(t) * C, Real(1), d, C);
    }
  }
}

// ---- layernorm ----
// Per row: mean and biased variance in double (two passes, so no cancellation),
// rstd = 1/sqrt(var + 1e-5). mean and rstd are saved rounded to Real and the
// normalisation uses those saved values, so backward sees exactly what forward used.
template <typename Real>
void layernorm_row(Real* out, Real* mean, Real* rstd, const Real* x, const Real* w, const Real* b,
                   int C) {
  double sum = 0;
  for (int c = 0; c < C; ++c) sum += x[c];
  double mu = sum / C;
  double sq = 0;
  for (int c = 0; c < C; ++c) sq += (x[c] - mu) * (x[c] - mu);
  Real m = static_cast<Real>(mu);
  Real r = static_cast<Real>(1.0 / std::sqrt(sq / C + kLayerNormEps));
  for (int c = 0; c < C; ++c) out[c] = (x[c] - m) * r * w[c] + b[c];
  *mean = m;
  *rstd = r;
}

template <typename Real>
void layernorm_forward(Real* out, Real* mean, Real* rstd, const Real* inp, const Real* w,
                       const Real* b, int N, int C) {
  for (int i = 0; i < N; ++i) {
    size_t off = static_cast<size_t>(i) * C;
    layernorm_row(out + off, mean + i, rstd + i, inp + off, w, b, C);
  }
}

// residual = a + b (rounded to Real), then out = layernorm(residual), row by row
// so that the residual row is still in cache when it is normalised.
template <typename Real>
void residual_layernorm_forward(Real* residual, Real* out, Real* mean, Real* rstd, const Real* a,
                                const Real* b, const Real* w, const Real* bias, int N, int C) {
  for (int i = 0; i < N; ++i) {
    size_t off = static_cast<size_t>(i) * C;
    for (int c = 0; c < C; ++c) residual[off + c] = a[off + c] + b[off + c];
    layernorm_row(out + off, mean + i, rstd + i, residual + off, w, bias, C);
  }
}

// With xhat = (x - mean) * rstd and g = dout * w, per row:
//   dinp += rstd * (g - mean(g) - xhat * mean(g * xhat)),
// and over rows dw += sum dout * xhat, db += sum dout. The two row means and the
// dw/db column sums accumulate in double; dw/db are added once at the end.
template <typename Real>
void layernorm_backward(Real* dinp, Real* dw, Real* db, const Real* dout, const Real* inp,
                        const Real* w, const Real* mean, const Real* rstd, int N, int C) {
  std::vector<double> dw_sum(C, 0.0), db_sum(C, 0.0);
  for (int i = 0; i < N; ++i) {
    size_t off = static_cast<size_t>(i) * C;
    const Real* x = inp + off;
    const Real* dy = dout + off;
    Real* dx = dinp + off;
    Real m = mean[i], r = rstd[i];
    double sum_g = 0, sum_gx = 0;
    for (int c = 0; c < C; ++c) {
      Real xhat = (x[c] - m) * r;
      Real g = dy[c] * w[c];
      sum_g += g;
      sum_gx += static_cast<double>(g) * xhat;
      dw_sum[c] += static_cast<double>(dy[c]) * xhat;
      db_sum[c] += dy[c];
    }
    Real mean_g = static_cast<Real>(sum_g / C), mean_gx = static_cast<Real>(sum_gx / C);
    for (int c = 0; c < C; ++c) {
      Real xhat = (x[c] - m) * r;
      dx[c] += r * (dy[c] * w[c] - mean_g - xhat * mean_gx);
    }
  }
  for (int c = 0; c < C; ++c) {
    dw[c] += static_cast<Real>(dw_sum[c]);
    db[c] += static_cast<Real>(db_sum[c]);
  }
}

// ---- GELU, tanh form: gelu(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3) ----
// Evaluated through the identity 0.5 (1 + tanh(u)) = s = 1 / (1 + exp(-2u)): one exp
// instead of a tanh (several times cheaper in libm), and well behaved at both tails
// (exp overflows to inf for very negative x, giving s = 0). Then
//   gelu(x) = x s,   gelu'(x) = s + 2 x s (1 - s) sqrt(2/pi) (1 + 3 * 0.044715 x^2),
// the latter from 1 + tanh(u) = 2s and 1 - tanh(u)^2 = 4 s (1 - s).
template <typename Real>
inline Real gelu_sigmoid(Real x) {
  const Real k = static_cast<Real>(0.79788456080286535588), a = static_cast<Real>(0.044715);
  return Real(1) / (Real(1) + std::exp(Real(-2) * k * (x + a * x * x * x)));
}

template <typename Real>
inline Real gelu(Real x) {
  return x * gelu_sigmoid(x);
}

template <typename Real>
inline Real gelu_grad(Real x) {
  const Real k = static_cast<Real>(0.79788456080286535588), a = static_cast<Real>(0.044715);
  Real s = gelu_sigmoid(x);
  return s + Real(2) * x * s * (Real(1) - s) * k * (Real(1) + Real(3) * a * x * x);
}

// ---- matmul (Linear layer, weight [OC, C]) ----
// Forward: one GEMM inp[N,C] x w[OC,C]^T into out (or into pre_gelu when the GELU
// is fused), then a row pass adding the bias and, fused, out = gelu(pre_gelu).
template <typename Real>
void matmul_forward(Real* out, Real* pre_gelu, const Real* inp, const Real* w, const Real* bias,
                    int N, int C, int OC) {
  Real* product = pre_gelu ? pre_gelu : out;
  gemm(false, true, N, OC, C, inp, C, w, C, false, product, OC);
  for (int i = 0; i < N; ++i) {
    Real* p = product + static_cast<size_t>(i) * OC;
    if (bias) axpy(p, Real(1), bias, OC);
    if (pre_gelu) {
      Real* o = out + static_cast<size_t>(i) * OC;
      for (int j = 0; j < OC; ++j) o[j] = gelu(p[j]);
    }
  }
}

// Backward: dinp = dout[N,OC] x w[OC,C] (overwritten, then scaled elementwise by
// gelu'(inp_pre_gelu) when the input was a GELU output); dw += dout^T x inp (GEMM
// accumulating into dw); dbias += column sums of dout, summed in double.
template <typename Real>
void matmul_backward(Real* dinp, Real* dw, Real* dbias, const Real* dout, const Real* inp,
                     const Real* w, const Real* inp_pre_gelu, int N, int C, int OC) {
  if (dinp) {
    gemm(false, false, N, C, OC, dout, OC, w, C, false, dinp, C);
    if (inp_pre_gelu) {
      size_t n = static_cast<size_t>(N) * C;
      for (size_t i = 0; i < n; ++i) dinp[i] *= gelu_grad(inp_pre_gelu[i]);
    }
  }
  gemm(true, false, OC, C, N, dout, OC, inp, C, true, dw, C);
  if (dbias) {
    std::vector<double> sum(OC, 0.0);
    for (int i = 0; i < N; ++i) accumulate(sum.data(), dout + static_cast<size_t>(i) * OC, OC);
    for (int j = 0; j < OC; ++j) dbias[j] += static_cast<Real>(sum[j]);
  }
}

// ---- causal multi-head attention ----
// qkv[b,t,:] = q | k | v, each C wide; head h uses channels h*hs..(h+1)*hs of each,
// hs = C/NH. Work goes one (b, h) at a time. That head's keys are first copied
// transposed into kt[hs][T], so the scores of query t against keys 0..t are built
// as hs contiguous axpys over kt rows (vectorized, no reductions), and values are
// accumulated as axpys over contiguous value rows. Scratch is one head's kt (and
// vt in backward) plus one row of scores: never a T x T matrix.

// Copies head h of part (0 = q, 1 = k, 2 = v) of batch b, transposed: dst[d*T + t].
template <typename Real>
void gather_head_transposed(Real* dst, const Real* qkv, int b, int h, int part, int T, int C,
                            int hs) {
  for (int t = 0; t < T; ++t) {
    const Real* src = qkv + (static_cast<size_t>(b) * T + t) * 3 * C + part * C + h * hs;
    for (int d = 0; d < hs; ++d) dst[static_cast<size_t>(d) * T + t] = src[d];
  }
}

// scores[j] = scale * q . k_j for j < n_keys, from the transposed keys kt[hs][T].
// Shared by forward and backward so that both see bit-identical scores.
template <typename Real>
void causal_scores(Real* scores, const Real* q, const Real* kt, int T, int n_keys, int hs,
                   Real scale) {
  std::fill(scores, scores + n_keys, Real(0));
  for (int d = 0; d < hs; ++d) axpy(scores, q[d], kt + static_cast<size_t>(d) * T, n_keys);
  for (int j = 0; j < n_keys; ++j) scores[j] *= scale;
}

// Softmax with max subtraction; the sum of exponentials is accumulated in double,
// lse = max + log(sum) is what backward needs to rebuild the probabilities.
template <typename Real>
void attention_forward(Real* out, Real* lse, const Real* qkv, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const Real scale = static_cast<Real>(1.0 / std::sqrt(static_cast<double>(hs)));
  std::vector<Real> kt(static_cast<size_t>(hs) * T), scores(T);
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      gather_head_transposed(kt.data(), qkv, b, h, 1, T, C, hs);
      for (int t = 0; t < T; ++t) {
        const Real* q = qkv + (static_cast<size_t>(b) * T + t) * 3 * C + h * hs;
        causal_scores(scores.data(), q, kt.data(), T, t + 1, hs, scale);
        Real row_max = *std::max_element(scores.begin(), scores.begin() + t + 1);
        double sum = 0;
        for (int j = 0; j <= t; ++j) {
          scores[j] = std::exp(scores[j] - row_max);
          sum += scores[j];
        }
        Real* o = out + (static_cast<size_t>(b) * T + t) * C + h * hs;
        std::fill(o, o + hs, Real(0));
        for (int j = 0; j <= t; ++j) {
          const Real* v = qkv + (static_cast<size_t>(b) * T + j) * 3 * C + 2 * C + h * hs;
          axpy(o, scores[j], v, hs);
        }
        Real inv = static_cast<Real>(1.0 / sum);
        for (int d = 0; d < hs; ++d) o[d] *= inv;
        lse[(static_cast<size_t>(b) * NH + h) * T + t] = static_cast<Real>(row_max + std::log(sum));
      }
    }
  }
}

// Per query row t of head (b, h): p_j = exp(s_j - lse) from the recomputed scores,
// dp_j = dout_t . v_j (axpys over the transposed values vt), D = dout_t . out_t
// (= sum_j p_j dp_j), ds_j = p_j (dp_j - D); then
//   dq_t = scale * sum_j ds_j k_j,  dk_j += scale * ds_j q_t,  dv_j += p_j dout_t.
// dqkv is zeroed first because dk and dv gather contributions from many queries.
template <typename Real>
void attention_backward(Real* dqkv, const Real* dout, const Real* qkv, const Real* out,
                        const Real* lse, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const Real scale = static_cast<Real>(1.0 / std::sqrt(static_cast<double>(hs)));
  std::fill(dqkv, dqkv + static_cast<size_t>(B) * T * 3 * C, Real(0));
  std::vector<Real> kt(static_cast<size_t>(hs) * T), vt(static_cast<size_t>(hs) * T);
  std::vector<Real> p(T), dp(T);
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      gather_head_transposed(kt.data(), qkv, b, h, 1, T, C, hs);
      gather_head_transposed(vt.data(), qkv, b, h, 2, T, C, hs);
      for (int t = 0; t < T; ++t) {
        size_t row = static_cast<size_t>(b) * T + t;
        const Real* q = qkv + row * 3 * C + h * hs;
        const Real* dy = dout + row * C + h * hs;
        const Real* y = out + row * C + h * hs;
        Real row_lse = lse[(static_cast<size_t>(b) * NH + h) * T + t];
        int n_keys = t + 1;
        causal_scores(p.data(), q, kt.data(), T, n_keys, hs, scale);
        for (int j = 0; j < n_keys; ++j) p[j] = std::exp(p[j] - row_lse);
        std::fill(dp.begin(), dp.begin() + n_keys, Real(0));
        for (int d = 0; d < hs; ++d) {
          axpy(dp.data(), dy[d], vt.data() + static_cast<size_t>(d) * T, n_keys);
        }
        Real D = dot(dy, y, hs);
        Real* dq = dqkv + row * 3 * C + h * hs;
        for (int j = 0; j < n_keys; ++j) {
          size_t key_row = static_cast<size_t>(b) * T + j;
          const Real* k = qkv + key_row * 3 * C + C + h * hs;
          Real* dk = dqkv + key_row * 3 * C + C + h * hs;
          Real* dv = dqkv + key_row * 3 * C + 2 * C + h * hs;
          Real ds = scale * p[j] * (dp[j] - D);
          axpy(dq, ds, k, hs);
          axpy(dk, ds, q, hs);
          axpy(dv, p[j], dy, hs);
        }
      }
    }
  }
}

// ---- cross-entropy over logits[N,V] ----
// Per row: max subtraction, sum of exponentials in double, loss = log(sum) -
// (logit[target] - max). The fused version stores exp(x - max) in place during the
// first pass and rescales it in the second, one exp per logit. A target outside
// [0, V) is an error (the data pipeline produced a token the vocabulary lacks).
inline void check_target(int target, int row, int V) {
  if (target < 0 || target >= V) {
    throw std::runtime_error("cross_entropy: targets[" + std::to_string(row) +
                             "] = " + std::to_string(target) + ", expected a token id in [0, " +
                             std::to_string(V) + ")");
  }
}

template <typename Real>
void cross_entropy_forward_backward(Real* losses, Real* logits, const int* targets, int N, int V,
                                    Real dloss) {
  for (int i = 0; i < N; ++i) {
    Real* x = logits + static_cast<size_t>(i) * V;
    int target = targets[i];
    check_target(target, i, V);
    Real row_max = *std::max_element(x, x + V);
    Real target_shifted = x[target] - row_max;
    double sum = 0;
    for (int j = 0; j < V; ++j) {
      x[j] = std::exp(x[j] - row_max);
      sum += x[j];
    }
    losses[i] = static_cast<Real>(std::log(sum) - target_shifted);
    Real factor = static_cast<Real>(dloss / sum);
    for (int j = 0; j < V; ++j) x[j] *= factor;
    x[target] -= dloss;
  }
}

template <typename Real>
void cross_entropy_forward(Real* losses, const Real* logits, const int* targets, int N, int V) {
  for (int i = 0; i < N; ++i) {
    const Real* x = logits + static_cast<size_t>(i) * V;
    int target = targets[i];
    check_target(target, i, V);
    Real row_max = *std::max_element(x, x + V);
    double sum = 0;
    for (int j = 0; j < V; ++j) sum += std::exp(x[j] - row_max);
    losses[i] = static_cast<Real>(std::log(sum) - (x[target] - row_max));
  }
}

// ---- optimizer ----
// AdamW with decoupled weight decay, elementwise over one segment:
//   g = grad * grad_scale; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
//   mhat = m / (1 - b1^t); vhat = v / (1 - b2^t);
//   master -= lr * (mhat / (sqrt(vhat) + eps) + wd * master); param = master (rounded).
// The bias corrections are computed once per call in double.
template <typename Real>
void adamw(Real* param, Real* master, const Real* grad, Real* m, Real* v, size_t n,
           const AdamWArgs& a) {
  if (a.t < 1) {
    throw std::runtime_error("adamw: step t = " + std::to_string(a.t) + ", expected >= 1");
  }
  const Real b1 = a.beta1, b2 = a.beta2, lr = a.lr, eps = a.eps, wd = a.weight_decay;
  const Real gs = a.grad_scale;
  const Real bc1 = static_cast<Real>(1.0 - std::pow(static_cast<double>(a.beta1), a.t));
  const Real bc2 = static_cast<Real>(1.0 - std::pow(static_cast<double>(a.beta2), a.t));
  for (size_t i = 0; i < n; ++i) {
    Real g = grad[i] * gs;
    m[i] = b1 * m[i] + (Real(1) - b1) * g;
    v[i] = b2 * v[i] + (Real(1) - b2) * g * g;
    Real mhat = m[i] / bc1, vhat = v[i] / bc2;
    master[i] -= lr * (mhat / (std::sqrt(vhat) + eps) + wd * master[i]);
    param[i] = master[i];
  }
}

// Sum of squares in double, in index order.
template <typename Real>
double sum_squares(const Real* x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}

}  // namespace zt::cpu
