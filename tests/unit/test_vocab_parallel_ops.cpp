// The vocabulary-parallel ops of the CPU backend (model/ops.h, cpu_vocab_parallel.h):
// each against a float64 reference written here, on fresh random inputs whose
// tokens and targets include every shard's edges (its first and last id and the
// ids just outside); then the property tensor parallelism relies on: splitting
// a vocabulary into 2 or 3 uneven shards (one of them empty), running the ops
// per shard and combining (sum, merge, concatenation) gives what the unsharded
// encoder and cross-entropy ops give. Inputs are fresh each run; the seed is
// printed (ZT_TEST_SEED replays one).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/ops.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"

namespace zt {
namespace {

using Floats = std::vector<float>;
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Rng {
  std::mt19937_64 gen;
  explicit Rng(uint64_t salt) : gen(test_rng(salt)) {}
  Floats uniform(size_t n, float lo, float hi) {
    std::uniform_real_distribution<float> d(lo, hi);
    Floats v(n);
    for (float& x : v) x = d(gen);
    return v;
  }
  int below(int hi) { return std::uniform_int_distribution<int>(0, hi - 1)(gen); }
};

struct Shard {
  int begin, count;
};

// Shards from their boundaries: {0, 20, 20, 53} is [0,20), [20,20) (empty), [20,53).
std::vector<Shard> shards_of(const std::vector<int>& bounds) {
  std::vector<Shard> s;
  for (size_t i = 0; i + 1 < bounds.size(); ++i)
    s.push_back({bounds[i], bounds[i + 1] - bounds[i]});
  return s;
}

// N ids in [0, V): first every shard edge that is a valid id (begin - 1, begin,
// begin + count - 1, begin + count), then random ones, then shuffled.
std::vector<int> ids_with_edges(Rng& rng, const std::vector<Shard>& shards, int V, int N) {
  std::vector<int> ids;
  for (const Shard& s : shards) {
    for (int id : {s.begin - 1, s.begin, s.begin + s.count - 1, s.begin + s.count})
      if (id >= 0 && id < V) ids.push_back(id);
  }
  REQUIRE(static_cast<int>(ids.size()) <= N);
  while (static_cast<int>(ids.size()) < N) ids.push_back(rng.below(V));
  std::shuffle(ids.begin(), ids.end(), rng.gen);
  return ids;
}

// A value no op computes here, in the element just past a shard's buffer: a
// write past the shard's end shows there (rather than corrupting the heap).
constexpr float kGuard = 12345.f;

// Columns [begin, begin + count) of a row-major [N, V] matrix, as [N, count]
// followed by one kGuard element; and back.
Floats columns(const Floats& m, int N, int V, Shard s) {
  Floats out(static_cast<size_t>(N) * s.count + 1, kGuard);
  for (int n = 0; n < N; ++n)
    for (int v = 0; v < s.count; ++v)
      out[static_cast<size_t>(n) * s.count + v] = m[n * V + s.begin + v];
  return out;
}
void put_columns(Floats& m, const Floats& part, int N, int V, Shard s) {
  for (int n = 0; n < N; ++n)
    for (int v = 0; v < s.count; ++v)
      m[n * V + s.begin + v] = part[static_cast<size_t>(n) * s.count + v];
}

// Largest |got - want| over the elements; both sizes must agree.
template <typename Want>
double max_abs_diff(const Floats& got, const std::vector<Want>& want) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(double(got[i]) - want[i]));
  return worst;
}

bool in_shard(int id, Shard s) { return id >= s.begin && id < s.begin + s.count; }

// float64 log(sum exp(x)) over a row, written directly: inputs here stay within
// [-5, 5], where no exp overflows, so no max needs subtracting.
double direct_logsumexp(const float* x, int n) {
  double sum = 0;
  for (int j = 0; j < n; ++j) sum += std::exp(double(x[j]));
  return std::log(sum);
}

const std::vector<std::vector<int>> kSplits = {
    {0, 26, 53}, {0, 17, 35, 53}, {0, 1, 52, 53}, {0, 20, 20, 53}};

}  // namespace

TEST_CASE("embedding_rows forward and backward match a float64 reference",
          "[ops][vocab_parallel]") {
  auto ops = make_cpu_ops();
  Rng rng(1);
  const int V = 53, N = 40, C = 12;
  const Floats wte = rng.uniform(static_cast<size_t>(V) * C, -1, 1);
  for (const auto& bounds : kSplits) {
    const std::vector<Shard> shards = shards_of(bounds);
    const std::vector<int> tokens = ids_with_edges(rng, shards, V, N);
    const Floats dout = rng.uniform(static_cast<size_t>(N) * C, -1, 1);
    for (const Shard& s : shards) {
      CAPTURE(s.begin, s.count);
      // The shard's rows inside the whole table: rows next to them exist, and must stay unread
      // and (backward) unwritten.
      const size_t at = static_cast<size_t>(s.begin) * C;
      Floats out(static_cast<size_t>(N) * C, 7.f);  // written, not accumulated
      ops->embedding_rows_forward(out.data(), tokens.data(), wte.data() + at, s.begin, s.count, N,
                                  C);
      std::vector<double> want(out.size(), 0.0);
      for (int n = 0; n < N; ++n)
        if (in_shard(tokens[n], s))
          for (int c = 0; c < C; ++c) want[n * C + c] = wte[tokens[n] * C + c];
      CHECK(max_abs_diff(out, want) == 0.0);

      const Floats init = rng.uniform(wte.size(), -1, 1);
      Floats dtable = init;
      ops->embedding_rows_backward(dtable.data() + at, dout.data(), tokens.data(), s.begin, s.count,
                                   N, C);
      std::vector<double> dwant(init.begin(), init.end());
      for (int n = 0; n < N; ++n)
        if (in_shard(tokens[n], s))
          for (int c = 0; c < C; ++c) dwant[tokens[n] * C + c] += dout[n * C + c];
      CHECK(max_abs_diff(dtable, dwant) < 1e-5);
      Floats again = init;
      ops->embedding_rows_backward(again.data() + at, dout.data(), tokens.data(), s.begin, s.count,
                                   N, C);
      CHECK(std::memcmp(again.data(), dtable.data(), again.size() * sizeof(float)) == 0);
    }
  }
  Floats out(C);
  int token = 0;
  CHECK_THROWS_AS(ops->embedding_rows_forward(out.data(), &token, wte.data(), -1, 5, 1, C),
                  std::runtime_error);
}

TEST_CASE("sharded loss pieces match a float64 reference", "[ops][vocab_parallel]") {
  auto ops = make_cpu_ops();
  Rng rng(2);
  const int V = 53, N = 30;
  const float dloss = 0.37f;
  const Floats logits = rng.uniform(static_cast<size_t>(N) * V, -5, 5);
  for (const auto& bounds : kSplits) {
    const std::vector<Shard> shards = shards_of(bounds);
    const std::vector<int> targets = ids_with_edges(rng, shards, V, N);
    for (const Shard& s : shards) {
      CAPTURE(s.begin, s.count);
      const Floats x = columns(logits, N, V, s);
      Floats lse(N), picked(N, 7.f);
      ops->logits_logsumexp(lse.data(), x.data(), N, s.count);
      ops->logits_pick(picked.data(), x.data(), targets.data(), s.begin, N, s.count);
      std::vector<double> want_lse(N), want_picked(N, 0.0);
      for (int n = 0; n < N; ++n) {
        want_lse[n] =
            s.count ? direct_logsumexp(&x[static_cast<size_t>(n) * s.count], s.count) : -kInf;
        if (in_shard(targets[n], s)) want_picked[n] = logits[n * V + targets[n]];
      }
      if (s.count) CHECK(max_abs_diff(lse, want_lse) < 1e-5);
      else CHECK(std::all_of(lse.begin(), lse.end(), [](float v) { return v == -INFINITY; }));
      CHECK(max_abs_diff(picked, want_picked) == 0.0);

      // The gradient against a made-up whole-vocabulary lse (any value: it only normalises).
      const Floats total_lse = rng.uniform(N, 3, 6);
      Floats grad = x;
      ops->cross_entropy_backward_from_lse(grad.data(), total_lse.data(), targets.data(), s.begin,
                                           N, s.count, dloss);
      std::vector<double> want_grad(grad.size(), kGuard);
      for (int n = 0; n < N; ++n)
        for (int v = 0; v < s.count; ++v)
          want_grad[n * s.count + v] =
              dloss * (std::exp(double(x[n * s.count + v]) - total_lse[n]) -
                       (targets[n] == s.begin + v ? 1.0 : 0.0));
      CHECK(max_abs_diff(grad, want_grad) < 4e-6);  // a few ulp of values up to e^2 * dloss
    }
  }

  // Merge: P parts of N rows against float64; in place (lse = parts) as well.
  const int P = 3;
  const Floats parts = rng.uniform(static_cast<size_t>(P) * N, -4, 4);
  std::vector<double> want(N);
  for (int n = 0; n < N; ++n) {
    double sum = 0;
    for (int p = 0; p < P; ++p) sum += std::exp(double(parts[p * N + n]));
    want[n] = std::log(sum);
  }
  Floats merged(N);
  ops->logsumexp_merge(merged.data(), parts.data(), P, N);
  CHECK(max_abs_diff(merged, want) < 1e-5);
  Floats in_place = parts;
  ops->logsumexp_merge(in_place.data(), in_place.data(), P, N);
  CHECK(max_abs_diff(Floats(in_place.begin(), in_place.begin() + N), want) < 1e-5);
  CHECK_THROWS_AS(ops->logsumexp_merge(merged.data(), parts.data(), 0, N), std::runtime_error);

  const Floats lse = rng.uniform(N, 2, 6), picked = rng.uniform(N, -5, 5);
  Floats losses(N);
  ops->losses_from_lse(losses.data(), lse.data(), picked.data(), N);
  std::vector<double> want_losses(N);
  for (int n = 0; n < N; ++n) want_losses[n] = double(lse[n]) - picked[n];
  CHECK(max_abs_diff(losses, want_losses) < 1e-6);
}

TEST_CASE("log-sum-exp and its merge subtract the max: no overflow, empty shards drop out",
          "[ops][vocab_parallel]") {
  auto ops = make_cpu_ops();
  // Rows of equal logits c over V columns: lse = c + log(V), whatever c.
  const int V = 6;
  const Floats rows = {1000,  1000,  1000,  1000,  1000,  1000,
                       -1000, -1000, -1000, -1000, -1000, -1000};
  Floats lse(2);
  ops->logits_logsumexp(lse.data(), rows.data(), 2, V);
  CHECK(lse[0] == Approx(1000 + std::log(6.0)).epsilon(1e-6));
  CHECK(lse[1] == Approx(-1000 + std::log(6.0)).epsilon(1e-6));

  // Parts [p * N + n], N = 3: {1000, 1000} -> 1000 + log 2; {-inf, 5} -> 5; {-inf, -inf} -> -inf.
  const float inf = INFINITY;
  const Floats parts = {1000, -inf, -inf, 1000, 5, -inf};
  Floats merged(3);
  ops->logsumexp_merge(merged.data(), parts.data(), 2, 3);
  CHECK(merged[0] == Approx(1000 + std::log(2.0)).epsilon(1e-6));
  CHECK(merged[1] == 5.f);
  CHECK(merged[2] == -inf);
}

TEST_CASE("vocabulary shards combine to the unsharded encoder and cross-entropy ops",
          "[ops][vocab_parallel]") {
  auto ops = make_cpu_ops();
  Rng rng(3);
  const int V = 53, B = 3, T = 11, N = B * T, C = 16;
  const float dloss = 1.f / N;
  for (const auto& bounds : kSplits) {
    const std::vector<Shard> shards = shards_of(bounds);
    const int P = static_cast<int>(shards.size());
    CAPTURE(P, bounds[1]);
    const std::vector<int> tokens = ids_with_edges(rng, shards, V, N);
    const std::vector<int> targets = ids_with_edges(rng, shards, V, N);
    const Floats wte = rng.uniform(static_cast<size_t>(V) * C, -1, 1);
    const Floats dout = rng.uniform(static_cast<size_t>(N) * C, -1, 1);
    const Floats dwte0 = rng.uniform(wte.size(), -1, 1);
    const Floats logits = rng.uniform(static_cast<size_t>(N) * V, -5, 5);

    // Embedding: the shards' outputs sum to the lookup; their gradients, concatenated, are dwte.
    Floats whole(static_cast<size_t>(N) * C), summed(whole.size(), 0.f), part(whole.size());
    ops->encoder_forward(whole.data(), tokens.data(), wte.data(), nullptr, B, T, C);
    Floats dwte = dwte0, dwte_shards = dwte0;
    ops->encoder_backward(dwte.data(), nullptr, dout.data(), tokens.data(), B, T, C);
    for (const Shard& s : shards) {
      const size_t at = static_cast<size_t>(s.begin) * C;
      ops->embedding_rows_forward(part.data(), tokens.data(), wte.data() + at, s.begin, s.count, N,
                                  C);
      for (size_t i = 0; i < part.size(); ++i) summed[i] += part[i];
      ops->embedding_rows_backward(dwte_shards.data() + at, dout.data(), tokens.data(), s.begin,
                                   s.count, N, C);
    }
    CHECK(std::memcmp(summed.data(), whole.data(), whole.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(dwte_shards.data(), dwte.data(), dwte.size() * sizeof(float)) == 0);

    // Loss: shard lse -> merged lse; picks summed; losses = lse - picked.
    Floats want_losses(N), fused_losses(N), grad = logits;
    ops->cross_entropy_forward(want_losses.data(), logits.data(), targets.data(), N, V);
    ops->cross_entropy_forward_backward(fused_losses.data(), grad.data(), targets.data(), N, V,
                                        dloss);
    Floats parts(static_cast<size_t>(P) * N), picked_sum(N, 0.f), picked(N), lse(N);
    std::vector<Floats> shard_logits;
    for (int p = 0; p < P; ++p) {
      shard_logits.push_back(columns(logits, N, V, shards[p]));
      ops->logits_logsumexp(parts.data() + static_cast<size_t>(p) * N, shard_logits[p].data(), N,
                            shards[p].count);
      ops->logits_pick(picked.data(), shard_logits[p].data(), targets.data(), shards[p].begin, N,
                       shards[p].count);
      for (int n = 0; n < N; ++n) picked_sum[n] += picked[n];
    }
    for (int n = 0; n < N; ++n) CHECK(picked_sum[n] == logits[n * V + targets[n]]);
    ops->logsumexp_merge(lse.data(), parts.data(), P, N);
    Floats losses(N);
    ops->losses_from_lse(losses.data(), lse.data(), picked_sum.data(), N);
    CHECK(max_abs_diff(losses, want_losses) < 1e-5);

    // Gradient: each shard's columns from the merged lse, concatenated, are the fused gradient.
    Floats grad_shards(logits.size(), NAN);
    for (int p = 0; p < P; ++p) {
      ops->cross_entropy_backward_from_lse(shard_logits[p].data(), lse.data(), targets.data(),
                                           shards[p].begin, N, shards[p].count, dloss);
      put_columns(grad_shards, shard_logits[p], N, V, shards[p]);
    }
    CHECK(max_abs_diff(grad_shards, grad) < 1e-5 * dloss);
  }
}

}  // namespace zt
