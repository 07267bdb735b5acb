// CPU reference kernels: every backward against central finite differences of the
// float64 instantiation, forwards against direct formulas written here, the float
// instantiation against the double one, the matmul core against a naive loop, and
// the Ops object against the kernels. Inputs are fresh random numbers each run; the
// seed is printed (set ZT_TEST_SEED to replay one).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/cpu/cpu_kernels.h"
#include "model/cpu/cpu_matmul.h"
#include "model/device_services.h"
#include "model/ops.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"

namespace zt {
namespace {

using Vec = std::vector<double>;

// One stream per test (salt), all derived from the run's seed. Values are rounded
// to float so that float and double runs start from identical inputs.
struct Rng {
  std::mt19937_64 gen;
  explicit Rng(uint64_t salt) : gen(test_rng(salt)) {}
  Vec uniform(size_t n, double lo = -1, double hi = 1) {
    std::uniform_real_distribution<double> d(lo, hi);
    Vec v(n);
    for (double& x : v) x = static_cast<float>(d(gen));
    return v;
  }
  std::vector<int> ints(size_t n, int hi) {
    std::uniform_int_distribution<int> d(0, hi - 1);
    std::vector<int> v(n);
    for (int& x : v) x = d(gen);
    return v;
  }
};

// ||a - b|| / max(||b||, tiny)
double rel_l2(const Vec& a, const Vec& b) {
  REQUIRE(a.size() == b.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-300);
}

void expect_close(const Vec& got, const Vec& want, double tol, const std::string& what) {
  double err = rel_l2(got, want);
  INFO(what << ": relative L2 error " << err << " (tolerance " << tol << ")");
  CHECK(err < tol);
}

double weighted_sum(const Vec& w, const Vec& y) {
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += w[i] * y[i];
  return s;
}

Vec minus(const Vec& a, const Vec& b) {
  Vec d(a.size());
  for (size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  return d;
}

// Central differences of loss() with respect to every element of x.
Vec numeric_grad(Vec& x, const std::function<double()>& loss) {
  const double h = 1e-5;
  Vec g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    double keep = x[i];
    x[i] = keep + h;
    double up = loss();
    x[i] = keep - h;
    double down = loss();
    x[i] = keep;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

constexpr double kFdTol = 1e-6;   // double kernels vs central differences (h = 1e-5)
constexpr double kF32Tol = 1e-5;  // float kernels vs double kernels

// GPT-2's tanh GELU, written out independently of the kernels.
double gelu_formula(double x) {
  const double pi = std::acos(-1.0);
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / pi) * (x + 0.044715 * x * x * x)));
}

TEST_CASE("encoder backward matches finite differences and accumulates", "[cpu_ops]") {
  Rng rng(1);
  const int B = 2, T = 5, C = 8, V = 6;
  std::vector<int> tokens = rng.ints(B * T, V);
  tokens[7] = tokens[2];  // at least one repeated token
  Vec wte = rng.uniform(V * C), wpe = rng.uniform(T * C), dout = rng.uniform(B * T * C);
  Vec out(B * T * C);
  auto loss = [&] {
    cpu::encoder_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
    return weighted_sum(dout, out);
  };
  loss();
  for (int i = 0; i < B * T * C; ++i) {
    int row = i / C, c = i % C;
    REQUIRE(out[i] == wte[tokens[row] * C + c] + wpe[(row % T) * C + c]);
  }
  Vec dwte0 = rng.uniform(V * C), dwpe0 = rng.uniform(T * C);
  Vec dwte = dwte0, dwpe = dwpe0;
  cpu::encoder_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), B, T, C);
  expect_close(minus(dwte, dwte0), numeric_grad(wte, loss), kFdTol, "dwte");
  expect_close(minus(dwpe, dwpe0), numeric_grad(wpe, loss), kFdTol, "dwpe");

  // With dout = 1, every row adds exactly 1: dwte counts token uses, dwpe counts B.
  Vec ones(B * T * C, 1.0), count_wte(V * C, 0.0), count_wpe(T * C, 0.0);
  cpu::encoder_backward(count_wte.data(), count_wpe.data(), ones.data(), tokens.data(), B, T, C);
  cpu::encoder_backward(count_wte.data(), count_wpe.data(), ones.data(), tokens.data(), B, T, C);
  for (int v = 0; v < V; ++v) {
    double uses = static_cast<double>(std::count(tokens.begin(), tokens.end(), v));
    for (int c = 0; c < C; ++c) CHECK(count_wte[v * C + c] == 2 * uses);
  }
  for (double x : count_wpe) CHECK(x == 2 * B);
}

TEST_CASE("layernorm forward statistics and backward finite differences", "[cpu_ops]") {
  Rng rng(2);
  const int N = 7, C = 8;
  Vec inp = rng.uniform(N * C, -2, 3), w = rng.uniform(C), b = rng.uniform(C);
  Vec dout = rng.uniform(N * C), out(N * C), mean(N), rstd(N);
  auto loss = [&] {
    cpu::layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), N,
                           C);
    return weighted_sum(dout, out);
  };
  loss();
  for (int i = 0; i < N; ++i) {
    double mu = 0, var = 0;
    for (int c = 0; c < C; ++c) mu += inp[i * C + c] / C;
    for (int c = 0; c < C; ++c) var += (inp[i * C + c] - mu) * (inp[i * C + c] - mu) / C;
    CHECK(std::fabs(mean[i] - mu) < 1e-12);
    CHECK(std::fabs(rstd[i] - 1 / std::sqrt(var + 1e-5)) < 1e-12 * rstd[i]);
  }
  Vec dinp0 = rng.uniform(N * C), dw0 = rng.uniform(C), db0 = rng.uniform(C);
  Vec dinp = dinp0, dw = dw0, db = db0;
  cpu::layernorm_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(),
                          mean.data(), rstd.data(), N, C);
  expect_close(minus(dinp, dinp0), numeric_grad(inp, loss), kFdTol, "dinp");
  expect_close(minus(dw, dw0), numeric_grad(w, loss), kFdTol, "dw");
  expect_close(minus(db, db0), numeric_grad(b, loss), kFdTol, "db");
}

TEST_CASE("residual layernorm forward and its gradient", "[cpu_ops]") {
  Rng rng(3);
  const int N = 5, C = 12;
  Vec a = rng.uniform(N * C), b = rng.uniform(N * C), w = rng.uniform(C), bias = rng.uniform(C);
  Vec dres = rng.uniform(N * C), dout = rng.uniform(N * C);
  Vec res(N * C), out(N * C), mean(N), rstd(N);
  auto loss = [&] {
    cpu::residual_layernorm_forward(res.data(), out.data(), mean.data(), rstd.data(), a.data(),
                                    b.data(), w.data(), bias.data(), N, C);
    return weighted_sum(dres, res) + weighted_sum(dout, out);
  };
  loss();
  Vec plain(N * C), plain_mean(N), plain_rstd(N);
  cpu::layernorm_forward(plain.data(), plain_mean.data(), plain_rstd.data(), res.data(), w.data(),
                         bias.data(), N, C);
  for (int i = 0; i < N * C; ++i) REQUIRE(res[i] == a[i] + b[i]);
  CHECK(plain == out);
  // The model's backward: the residual gradient plus the layernorm's, into one buffer.
  Vec dsum = dres, dw(C, 0.0), dbias(C, 0.0);
  cpu::layernorm_backward(dsum.data(), dw.data(), dbias.data(), dout.data(), res.data(), w.data(),
                          mean.data(), rstd.data(), N, C);
  expect_close(dsum, numeric_grad(a, loss), kFdTol, "da");
  expect_close(dsum, numeric_grad(b, loss), kFdTol, "db");
  expect_close(dw, numeric_grad(w, loss), kFdTol, "dw");
  expect_close(dbias, numeric_grad(bias, loss), kFdTol, "dbias");
}

TEST_CASE("matmul backward matches finite differences", "[cpu_ops]") {
  const int N = 7, C = 9, OC = 6;
  bool with_bias = true, gelu_input = false;
  SECTION("with bias") {}
  SECTION("without bias") { with_bias = false; }
  SECTION("input is a GELU output (fused gelu backward)") { gelu_input = true; }
  Rng rng(4 + with_bias + 2 * gelu_input);
  Vec x = rng.uniform(N * C, -2, 2), w = rng.uniform(OC * C), bias = rng.uniform(OC);
  Vec dout = rng.uniform(N * OC), inp(N * C), out(N * OC);
  auto loss = [&] {
    for (int i = 0; i < N * C; ++i) inp[i] = gelu_input ? gelu_formula(x[i]) : x[i];
    cpu::matmul_forward(out.data(), static_cast<double*>(nullptr), inp.data(), w.data(),
                        with_bias ? bias.data() : nullptr, N, C, OC);
    return weighted_sum(dout, out);
  };
  loss();
  for (int i = 0; i < N; ++i) {
    for (int o = 0; o < OC; ++o) {
      double want = with_bias ? bias[o] : 0.0;
      for (int c = 0; c < C; ++c) want += inp[i * C + c] * w[o * C + c];
      REQUIRE(std::fabs(out[i * OC + o] - want) < 1e-12);
    }
  }
  Vec dinp = rng.uniform(N * C);  // garbage: dinp is overwritten
  Vec dw0 = rng.uniform(OC * C), db0 = rng.uniform(OC), dw = dw0, db = db0;
  cpu::matmul_backward(dinp.data(), dw.data(), with_bias ? db.data() : nullptr, dout.data(),
                       inp.data(), w.data(), gelu_input ? x.data() : nullptr, N, C, OC);
  expect_close(dinp, numeric_grad(x, loss), kFdTol, "dinp");
  expect_close(minus(dw, dw0), numeric_grad(w, loss), kFdTol, "dw");
  if (with_bias) expect_close(minus(db, db0), numeric_grad(bias, loss), kFdTol, "dbias");
  if (!with_bias) CHECK(db == db0);

  // Without dinp the parameter gradients are the same.
  Vec dw_only = dw0;
  cpu::matmul_backward(static_cast<double*>(nullptr), dw_only.data(), static_cast<double*>(nullptr),
                       dout.data(), inp.data(), w.data(), static_cast<double*>(nullptr), N, C, OC);
  CHECK(dw_only == dw);
}

TEST_CASE("fused GELU forward: fc -> gelu -> proj chain gradients", "[cpu_ops]") {
  Rng rng(8);
  const int N = 6, C = 5, H = 11, OC = 4;
  Vec x = rng.uniform(N * C), w1 = rng.uniform(H * C), b1 = rng.uniform(H);
  Vec w2 = rng.uniform(OC * H), b2 = rng.uniform(OC), dy = rng.uniform(N * OC);
  Vec pre(N * H), h(N * H), y(N * OC);
  auto loss = [&] {
    cpu::matmul_forward(h.data(), pre.data(), x.data(), w1.data(), b1.data(), N, C, H);
    cpu::matmul_forward(y.data(), static_cast<double*>(nullptr), h.data(), w2.data(), b2.data(), N,
                        H, OC);
    return weighted_sum(dy, y);
  };
  loss();
  Vec plain(N * H);
  cpu::matmul_forward(plain.data(), static_cast<double*>(nullptr), x.data(), w1.data(), b1.data(),
                      N, C, H);
  CHECK(plain == pre);
  Vec h_want(N * H);
  for (int i = 0; i < N * H; ++i) h_want[i] = gelu_formula(pre[i]);
  expect_close(h, h_want, 1e-14, "gelu(pre)");

  Vec dh(N * H), dx(N * C), dw1(H * C, 0.0), db1(H, 0.0), dw2(OC * H, 0.0), db2(OC, 0.0);
  cpu::matmul_backward(dh.data(), dw2.data(), db2.data(), dy.data(), h.data(), w2.data(),
                       pre.data(), N, H, OC);
  cpu::matmul_backward(dx.data(), dw1.data(), db1.data(), dh.data(), x.data(), w1.data(),
                       static_cast<double*>(nullptr), N, C, H);
  expect_close(dx, numeric_grad(x, loss), kFdTol, "dx");
  expect_close(dw1, numeric_grad(w1, loss), kFdTol, "dw1");
  expect_close(db1, numeric_grad(b1, loss), kFdTol, "db1");
  expect_close(dw2, numeric_grad(w2, loss), kFdTol, "dw2");
}

TEST_CASE("blocked GEMM matches a naive loop for every transpose, across block edges",
          "[cpu_ops]") {
  Rng rng(9);
  const int M = 70, N = 263, K = 130;  // crosses the 64 / 256 / 128 blocks and 4 x 8 tiles
  for (int form = 0; form < 8; ++form) {
    bool ta = form & 1, tb = form & 2, acc = form & 4;
    Vec A = rng.uniform(M * K), B = rng.uniform(K * N), C0 = rng.uniform(M * N);
    int lda = ta ? M : K, ldb = tb ? K : N;
    Vec want = C0;
    for (int i = 0; i < M; ++i) {
      for (int j = 0; j < N; ++j) {
        double s = acc ? C0[i * N + j] : 0.0;
        for (int k = 0; k < K; ++k) {
          s += (ta ? A[k * lda + i] : A[i * lda + k]) * (tb ? B[j * ldb + k] : B[k * ldb + j]);
        }
        want[i * N + j] = s;
      }
    }
    INFO("trans_a " << ta << " trans_b " << tb << " accumulate " << acc);
    Vec got = C0;
    cpu::blocked_gemm(ta, tb, M, N, K, A.data(), lda, B.data(), ldb, acc, got.data(), N);
    expect_close(got, want, 1e-14, "blocked_gemm<double>");
    std::vector<float> Af(A.begin(), A.end()), Bf(B.begin(), B.end()), Cf(C0.begin(), C0.end());
    std::vector<float> Cb = Cf;
    cpu::blocked_gemm(ta, tb, M, N, K, Af.data(), lda, Bf.data(), ldb, acc, Cb.data(), N);
    expect_close(Vec(Cb.begin(), Cb.end()), want, kF32Tol, "blocked_gemm<float>");
    cpu::gemm(ta, tb, M, N, K, Af.data(), lda, Bf.data(), ldb, acc, Cf.data(), N);
    expect_close(Vec(Cf.begin(), Cf.end()), want, kF32Tol, cpu::cpu_matmul_backend());
  }
}

// Causal attention written directly from its definition, for the forward check.
void naive_attention(Vec& out, Vec& lse, const Vec& qkv, int B, int T, int C, int NH) {
  int hs = C / NH;
  // element d of head h of part (0 q, 1 k, 2 v) at position t of batch b
  auto at = [&](int b, int t, int part, int h, int d) {
    return qkv[(b * T + t) * 3 * C + part * C + h * hs + d];
  };
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      for (int t = 0; t < T; ++t) {
        Vec s(t + 1, 0.0);
        for (int j = 0; j <= t; ++j) {
          for (int d = 0; d < hs; ++d) s[j] += at(b, t, 0, h, d) * at(b, j, 1, h, d);
          s[j] /= std::sqrt(static_cast<double>(hs));
        }
        double z = 0;
        for (double v : s) z += std::exp(v);
        lse[(b * NH + h) * T + t] = std::log(z);
        for (int d = 0; d < hs; ++d) {
          double o = 0;
          for (int j = 0; j <= t; ++j) o += std::exp(s[j]) / z * at(b, j, 2, h, d);
          out[(b * T + t) * C + h * hs + d] = o;
        }
      }
    }
  }
}

TEST_CASE("causal attention forward matches its definition, backward finite differences",
          "[cpu_ops]") {
  struct Shape {
    int B, T, C, NH;
  };
  for (Shape s : {Shape{2, 5, 8, 2}, Shape{1, 11, 30, 2}}) {
    const int B = s.B, T = s.T, C = s.C, NH = s.NH;
    INFO("B " << B << " T " << T << " C " << C << " NH " << NH);
    Rng rng(10 + T);
    Vec qkv = rng.uniform(B * T * 3 * C, -2, 2), dout = rng.uniform(B * T * C);
    Vec out(B * T * C), lse(B * NH * T), want_out(B * T * C), want_lse(B * NH * T);
    auto loss = [&] {
      cpu::attention_forward(out.data(), lse.data(), qkv.data(), B, T, C, NH);
      return weighted_sum(dout, out);
    };
    loss();
    naive_attention(want_out, want_lse, qkv, B, T, C, NH);
    expect_close(out, want_out, 1e-13, "out");
    expect_close(lse, want_lse, 1e-13, "lse");
    Vec dqkv = rng.uniform(B * T * 3 * C);  // garbage: dqkv is written
    cpu::attention_backward(dqkv.data(), dout.data(), qkv.data(), out.data(), lse.data(), B, T, C,
                            NH);
    expect_close(dqkv, numeric_grad(qkv, loss), kFdTol, "dqkv");
  }
}

TEST_CASE("cross-entropy losses, fused gradient and forward-only", "[cpu_ops]") {
  Rng rng(20);
  const int N = 7, V = 37;
  const double dloss = 1.0 / N;
  Vec logits = rng.uniform(N * V, -4, 4);
  std::vector<int> targets = rng.ints(N, V);
  Vec losses(N), forward_losses(N);
  auto loss = [&] {
    Vec scratch = logits;
    cpu::cross_entropy_forward_backward(losses.data(), scratch.data(), targets.data(), N, V, dloss);
    return dloss * std::accumulate(losses.begin(), losses.end(), 0.0);
  };
  Vec grad = logits;
  cpu::cross_entropy_forward_backward(losses.data(), grad.data(), targets.data(), N, V, dloss);
  Vec kept = logits;
  cpu::cross_entropy_forward(forward_losses.data(), kept.data(), targets.data(), N, V);
  CHECK(kept == logits);
  Vec want(N);
  for (int i = 0; i < N; ++i) {
    double z = 0;
    for (int j = 0; j < V; ++j) z += std::exp(logits[i * V + j]);
    want[i] = -std::log(std::exp(logits[i * V + targets[i]]) / z);
  }
  expect_close(losses, want, 1e-13, "fused losses");
  expect_close(forward_losses, want, 1e-13, "forward losses");
  expect_close(grad, numeric_grad(logits, loss), kFdTol, "dlogits");

  targets[3] = V;
  CHECK_THROWS_AS(cpu::cross_entropy_forward(losses.data(), logits.data(), targets.data(), N, V),
                  std::runtime_error);
}

// The kernels behind the Ops method names, so that run_every_op can drive either.
struct Kernels {
#define ZT_FORWARD_TO_KERNEL(op) \
  template <typename... Args>    \
  auto op(Args... args) {        \
    return cpu::op(args...);     \
  }
  ZT_FORWARD_TO_KERNEL(encoder_forward)
  ZT_FORWARD_TO_KERNEL(encoder_backward)
  ZT_FORWARD_TO_KERNEL(layernorm_forward)
  ZT_FORWARD_TO_KERNEL(layernorm_backward)
  ZT_FORWARD_TO_KERNEL(residual_layernorm_forward)
  ZT_FORWARD_TO_KERNEL(matmul_forward)
  ZT_FORWARD_TO_KERNEL(matmul_backward)
  ZT_FORWARD_TO_KERNEL(attention_forward)
  ZT_FORWARD_TO_KERNEL(attention_backward)
  ZT_FORWARD_TO_KERNEL(cross_entropy_forward_backward)
  ZT_FORWARD_TO_KERNEL(cross_entropy_forward)
  ZT_FORWARD_TO_KERNEL(adamw)
  ZT_FORWARD_TO_KERNEL(sum_squares)
#undef ZT_FORWARD_TO_KERNEL
};

// Every op in Real through api (Kernels, or an Ops object for float) on the same
// float-representable inputs, chained like a transformer block; outputs by name.
template <typename Real, typename Api>
std::map<std::string, Vec> run_every_op(Api& api, uint64_t salt) {
  Rng rng(salt);
  const int B = 2, T = 9, C = 24, NH = 3, OC = 40, V = 50, N = B * T;
  auto in = [&](size_t n, double lo = -1, double hi = 1) {
    Vec v = rng.uniform(n, lo, hi);
    return std::vector<Real>(v.begin(), v.end());
  };
  auto zeros = [](size_t n) { return std::vector<Real>(n, Real(0)); };
  std::map<std::string, Vec> r;
  auto keep = [&r](const std::string& name, const std::vector<Real>& v) {
    r[name] = Vec(v.begin(), v.end());
  };
  std::vector<int> tokens = rng.ints(N, V), targets = rng.ints(N, V);

  auto wte = in(V * C), wpe = in(T * C), enc = zeros(N * C);
  api.encoder_forward(enc.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
  auto dwte = in(V * C), dwpe = in(T * C), dx = in(N * C);
  api.encoder_backward(dwte.data(), dwpe.data(), dx.data(), tokens.data(), B, T, C);
  keep("encoder out", enc), keep("dwte", dwte), keep("dwpe", dwpe);

  auto a = in(N * C, -3, 3), w = in(C), bias = in(C), res = zeros(N * C), ln = zeros(N * C);
  auto mean = zeros(N), rstd = zeros(N), dinp = in(N * C), dw = in(C), db = in(C);
  api.residual_layernorm_forward(res.data(), ln.data(), mean.data(), rstd.data(), a.data(),
                                 enc.data(), w.data(), bias.data(), N, C);
  api.layernorm_backward(dinp.data(), dw.data(), db.data(), dx.data(), res.data(), w.data(),
                         mean.data(), rstd.data(), N, C);
  keep("residual", res), keep("ln out", ln), keep("ln mean", mean), keep("ln rstd", rstd);
  keep("ln dinp", dinp), keep("ln dw", dw), keep("ln db", db);
  api.layernorm_forward(ln.data(), mean.data(), rstd.data(), dinp.data(), w.data(), bias.data(), N,
                        C);
  keep("ln2 out", ln), keep("ln2 mean", mean), keep("ln2 rstd", rstd);

  auto mw = in(OC * C), mb = in(OC), pre = zeros(N * OC), act = zeros(N * OC);
  api.matmul_forward(act.data(), pre.data(), ln.data(), mw.data(), mb.data(), N, C, OC);
  auto pw = in(C * OC), dact = zeros(N * OC), dpw = in(C * OC), dpb = in(C);
  api.matmul_backward(dact.data(), dpw.data(), dpb.data(), dx.data(), act.data(), pw.data(),
                      pre.data(), N, OC, C);
  keep("matmul pre", pre), keep("matmul gelu", act), keep("matmul dinp", dact);
  keep("matmul dw", dpw), keep("matmul db", dpb);

  auto qkv = in(N * 3 * C, -2, 2), att = zeros(N * C), lse = zeros(B * NH * T);
  auto dqkv = zeros(N * 3 * C);
  api.attention_forward(att.data(), lse.data(), qkv.data(), B, T, C, NH);
  api.attention_backward(dqkv.data(), dx.data(), qkv.data(), att.data(), lse.data(), B, T, C, NH);
  keep("attention out", att), keep("attention lse", lse), keep("dqkv", dqkv);

  auto logits = in(N * V, -5, 5), losses = zeros(N), eval_losses = zeros(N);
  api.cross_entropy_forward(eval_losses.data(), logits.data(), targets.data(), N, V);
  api.cross_entropy_forward_backward(losses.data(), logits.data(), targets.data(), N, V,
                                     Real(1) / N);
  keep("ce losses", losses), keep("ce dlogits", logits), keep("ce eval losses", eval_losses);

  auto master = in(OC * C), m = zeros(OC * C), v = zeros(OC * C), param = zeros(OC * C);
  for (int t = 1; t <= 3; ++t) {
    AdamWArgs args{1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, t};
    api.adamw(param.data(), master.data(), mw.data(), m.data(), v.data(), master.size(), args);
  }
  keep("adamw param", param), keep("adamw m", m), keep("adamw v", v);
  r["sum_squares"] = Vec{api.sum_squares(qkv.data(), qkv.size())};
  return r;
}

TEST_CASE("float kernels agree with the double kernels", "[cpu_ops]") {
  Kernels kernels;
  auto f32 = run_every_op<float>(kernels, 30);
  auto f64 = run_every_op<double>(kernels, 30);
  REQUIRE(f32.size() == f64.size());
  for (const auto& [name, want] : f64) expect_close(f32.at(name), want, kF32Tol, name);
}

TEST_CASE("adamw follows the AdamW formula over several steps", "[cpu_ops]") {
  Rng rng(40);
  const size_t n = 37;
  Vec master = rng.uniform(n), m(n, 0.0), v(n, 0.0), param(n, 0.0);
  Vec ref_master = master, ref_m = m, ref_v = v;
  std::vector<float> f_master(master.begin(), master.end()), f_m(n, 0), f_v(n, 0), f_param(n, 0);
  for (int t = 1; t <= 5; ++t) {
    Vec grad = rng.uniform(n, -3, 3);
    std::vector<float> f_grad(grad.begin(), grad.end());
    AdamWArgs a{3e-3f, 0.9f, 0.999f, 1e-8f, 0.1f, 0.7f, t};
    cpu::adamw(param.data(), master.data(), grad.data(), m.data(), v.data(), n, a);
    cpu::adamw(f_param.data(), f_master.data(), f_grad.data(), f_m.data(), f_v.data(), n, a);
    for (size_t i = 0; i < n; ++i) {
      double g = grad[i] * double(a.grad_scale);
      ref_m[i] = double(a.beta1) * ref_m[i] + (1 - double(a.beta1)) * g;
      ref_v[i] = double(a.beta2) * ref_v[i] + (1 - double(a.beta2)) * g * g;
      double mhat = ref_m[i] / (1 - std::pow(double(a.beta1), t));
      double vhat = ref_v[i] / (1 - std::pow(double(a.beta2), t));
      ref_master[i] -= double(a.lr) * (mhat / (std::sqrt(vhat) + double(a.eps)) +
                                       double(a.weight_decay) * ref_master[i]);
    }
    INFO("step " << t);
    expect_close(master, ref_master, 1e-14, "master");
    expect_close(m, ref_m, 1e-14, "m");
    expect_close(v, ref_v, 1e-14, "v");
    CHECK(param == master);
    expect_close(Vec(f_master.begin(), f_master.end()), ref_master, kF32Tol, "float master");
  }
  AdamWArgs step0{1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 1.0f, 0};
  CHECK_THROWS_AS(cpu::adamw(param.data(), master.data(), m.data(), m.data(), v.data(), n, step0),
                  std::runtime_error);
}

TEST_CASE("sum_squares", "[cpu_ops]") {
  Rng rng(50);
  Vec x = rng.uniform(1001, -3, 3);
  long double want = 0;
  for (double v : x) want += static_cast<long double>(v) * v;
  CHECK(std::fabs(cpu::sum_squares(x.data(), x.size()) - static_cast<double>(want)) <
        1e-13 * static_cast<double>(want));
  std::vector<float> xf(x.begin(), x.end());
  CHECK(std::fabs(cpu::sum_squares(xf.data(), xf.size()) - static_cast<double>(want)) <
        1e-13 * static_cast<double>(want));
}

TEST_CASE("CpuOps: storage, ledger, and agreement with the float kernels", "[cpu_ops]") {
  std::unique_ptr<Ops> ops = make_cpu_ops();
  CHECK(ops->name() == "cpu");
  CHECK(ops->dtype() == DType::F32);
  CHECK_FALSE(ops->on_device());

  MemoryLedger& led = ops->ledger();
  const size_t sizes[] = {1000, 24, 4096, 0, 130};
  const MemCategory cats[] = {MemCategory::Params, MemCategory::Grads, MemCategory::Optimizer,
                              MemCategory::Activations, MemCategory::CommBuffers};
  std::vector<void*> blocks;
  for (int i = 0; i < 5; ++i) {
    void* p = ops->alloc(sizes[i], cats[i]);
    CHECK(reinterpret_cast<uintptr_t>(p) % 64 == 0);
    const auto* bytes = static_cast<const unsigned char*>(p);
    CHECK(std::all_of(bytes, bytes + sizes[i], [](unsigned char c) { return c == 0; }));
    CHECK(led.current(cats[i]) == sizes[i]);
    blocks.push_back(p);
  }
  void* more_grads = ops->alloc(76, MemCategory::Grads);
  CHECK(led.current(MemCategory::Grads) == 100);
  CHECK(led.current_total() == 1000 + 100 + 4096 + 0 + 130);
  ops->release(more_grads);
  CHECK(led.current(MemCategory::Grads) == 24);
  CHECK(led.peak(MemCategory::Grads) == 100);
  for (void* p : blocks) ops->release(p);
  CHECK(led.current_total() == 0);
  CHECK(led.peak_total() == 1000 + 100 + 4096 + 130);

  Rng rng(60);
  Vec x64 = rng.uniform(50), y64 = rng.uniform(50);
  std::vector<float> x(x64.begin(), x64.end()), y(y64.begin(), y64.end()), z(50), u(50);
  ops->from_host(z.data(), x.data(), 200);
  ops->copy(u.data(), z.data(), 200);
  CHECK(u == x);
  ops->services().add_inplace(z.data(), y.data(), 50);
  for (int i = 0; i < 50; ++i) CHECK(z[i] == x[i] + y[i]);
  ops->to_f32(u.data(), z.data(), 50);
  ops->from_f32(y.data(), u.data(), 50);
  ops->to_host(x.data(), y.data(), 200);
  CHECK(x == z);
  ops->memzero(z.data(), 200);
  CHECK(z == std::vector<float>(50, 0.0f));

  // Same code, same inputs: the Ops methods must reproduce the kernels bit for bit.
  Kernels kernels;
  auto via_kernels = run_every_op<float>(kernels, 61);
  auto via_ops = run_every_op<float>(*ops, 61);
  for (const auto& [name, want] : via_kernels) {
    INFO(name);
    CHECK(via_ops.at(name) == want);
  }
  std::vector<float> qkv(2 * 4 * 3 * 12), out(2 * 4 * 12), lse(2 * 5 * 4);
  CHECK_THROWS_AS(ops->attention_forward(out.data(), lse.data(), qkv.data(), 2, 4, 12, 5),
                  std::runtime_error);
}

}  // namespace
}  // namespace zt
