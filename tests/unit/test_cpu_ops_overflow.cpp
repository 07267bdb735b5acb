// CPU softmax paths on inputs large enough that exp() overflows without the
// max subtraction: logits and attention scores of order 1e4 (exp overflows
// float above 88 and double above 709). The references here shift by the
// row maximum themselves, so they stay exact where a naive one would not.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "model/cpu/cpu_kernels.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"

namespace zt {
namespace {

constexpr double kScale = 1e4;

template <typename Real>
std::vector<Real> large_values(std::mt19937_64& rng, size_t n, double scale) {
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::vector<Real> v(n);
  for (Real& x : v) x = static_cast<Real>(d(rng) * scale);
  return v;
}

// log(sum_j exp(x_j)) with the maximum factored out, in long double.
long double log_sum_exp(const std::vector<long double>& x) {
  const long double m = *std::max_element(x.begin(), x.end());
  long double s = 0;
  for (long double v : x) s += std::exp(v - m);
  return m + std::log(s);
}

template <typename Real>
void check_cross_entropy(double tol) {
  std::mt19937_64 rng(test_seed() + 0x1234);
  const int N = 6, V = 29;
  const std::vector<Real> logits = large_values<Real>(rng, size_t(N) * V, kScale);
  std::vector<int> targets(N);
  for (int& t : targets) t = static_cast<int>(rng() % V);
  std::vector<Real> fused = logits, losses(N), forward_losses(N);
  const Real dloss = Real(1) / N;
  cpu::cross_entropy_forward_backward(losses.data(), fused.data(), targets.data(), N, V, dloss);
  cpu::cross_entropy_forward(forward_losses.data(), logits.data(), targets.data(), N, V);
  for (int i = 0; i < N; ++i) {
    std::vector<long double> row(logits.begin() + i * V, logits.begin() + (i + 1) * V);
    const long double lse = log_sum_exp(row);
    const double want = static_cast<double>(lse - row[targets[i]]);
    INFO("row " << i << " target " << targets[i] << " want " << want);
    REQUIRE(std::isfinite(static_cast<double>(losses[i])));
    CHECK(std::fabs(losses[i] - want) <= tol * std::max(1.0, std::fabs(want)));
    CHECK(std::fabs(forward_losses[i] - want) <= tol * std::max(1.0, std::fabs(want)));
    for (int j = 0; j < V; ++j) {
      const double p = static_cast<double>(std::exp(row[j] - lse));
      const double g = dloss * (p - (j == targets[i] ? 1.0 : 0.0));
      REQUIRE(std::isfinite(static_cast<double>(fused[i * V + j])));
      CHECK(std::fabs(fused[i * V + j] - g) <= 1e-6);
    }
  }
}

TEST_CASE("cross-entropy stays exact on logits of order 1e4", "[cpu_ops]") {
  check_cross_entropy<double>(1e-12);
  check_cross_entropy<float>(1e-6);
}

template <typename Real>
void check_attention(double tol) {
  std::mt19937_64 rng(test_seed() + 0x5678);
  const int B = 1, T = 7, C = 8, NH = 2, hs = C / NH;
  // Scores q.k/sqrt(hs) of order 1e4: q and k entries of order 100.
  const std::vector<Real> qkv = large_values<Real>(rng, size_t(B) * T * 3 * C, 100.0);
  std::vector<Real> out(size_t(B) * T * C), lse(size_t(B) * NH * T);
  cpu::attention_forward(out.data(), lse.data(), qkv.data(), B, T, C, NH);
  auto at = [&](int t, int part, int h, int d) {
    return static_cast<long double>(qkv[size_t(t) * 3 * C + part * C + h * hs + d]);
  };
  for (int h = 0; h < NH; ++h) {
    for (int t = 0; t < T; ++t) {
      std::vector<long double> s(t + 1, 0.0L);
      for (int j = 0; j <= t; ++j) {
        for (int d = 0; d < hs; ++d) s[j] += at(t, 0, h, d) * at(j, 1, h, d);
        s[j] /= std::sqrt(static_cast<long double>(hs));
      }
      const long double z = log_sum_exp(s);
      const double got_lse = static_cast<double>(lse[size_t(h) * T + t]);
      INFO("head " << h << " query " << t);
      REQUIRE(std::isfinite(got_lse));
      CHECK(std::fabs(got_lse - static_cast<double>(z)) <= tol * std::fabs(static_cast<double>(z)));
      for (int d = 0; d < hs; ++d) {
        long double o = 0;
        for (int j = 0; j <= t; ++j) o += std::exp(s[j] - z) * at(j, 2, h, d);
        const double got = static_cast<double>(out[size_t(t) * C + h * hs + d]);
        REQUIRE(std::isfinite(got));
        CHECK(std::fabs(got - static_cast<double>(o)) <= tol * 100.0);
      }
    }
  }
  std::vector<Real> dout = large_values<Real>(rng, out.size(), 1.0), dqkv(qkv.size());
  cpu::attention_backward(dqkv.data(), dout.data(), qkv.data(), out.data(), lse.data(), B, T, C,
                          NH);
  for (Real g : dqkv) REQUIRE(std::isfinite(static_cast<double>(g)));
}

TEST_CASE("causal attention softmax stays exact on scores of order 1e4", "[cpu_ops]") {
  check_attention<double>(1e-10);
  check_attention<float>(1e-5);
}

}  // namespace
}  // namespace zt
