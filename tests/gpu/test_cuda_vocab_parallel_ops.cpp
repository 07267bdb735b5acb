// The CUDA backend's vocabulary-parallel ops (tensor parallelism's shards of the
// token embedding and of the logits' columns) against the CPU reference on the
// same bf16-rounded inputs, at shards whose widths are and are not multiples of
// the kernels' 8-wide vectors, with tokens and targets on every shard edge; and
// the shards combined against the GPU's own unsharded cross-entropy.
// Without a usable GPU every test prints one SKIPPED line and passes.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <stdexcept>
#include <vector>

#include "model/ops.h"
#include "tests/gpu/gpu_op_compare.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/support/catch.h"

namespace zt {

using namespace gpu_test;

namespace {

struct Shard {
  int begin, count;
};

// N ids in [0, V): each shard's edges that are valid ids (begin - 1, begin,
// begin + count - 1, begin + count), the rest random, shuffled.
std::vector<int> ids_with_edges(Rng& rng, const std::vector<Shard>& shards, int V, size_t N) {
  std::vector<int> ids;
  for (const Shard& s : shards)
    for (int id : {s.begin - 1, s.begin, s.begin + s.count - 1, s.begin + s.count})
      if (id >= 0 && id < V && ids.size() < N) ids.push_back(id);
  const std::vector<int> rest = rng.ints(N - ids.size(), V);
  ids.insert(ids.end(), rest.begin(), rest.end());
  std::shuffle(ids.begin(), ids.end(), rng.gen);
  return ids;
}

// Columns [s.begin, s.begin + s.count) of a row-major [N, V] matrix, as [N, s.count].
Vec columns(const Vec& m, size_t N, int V, Shard s) {
  Vec out(N * s.count);
  for (size_t n = 0; n < N; ++n)
    std::copy_n(m.begin() + n * V + s.begin, s.count, out.begin() + n * s.count);
  return out;
}

}  // namespace

TEST_CASE("cuda embedding_rows forward/backward match the cpu; backward is deterministic",
          "[gpu][vocab_parallel]") {
  SKIP_WITHOUT_GPU();
  Backends be;
  Rng rng(21);
  struct Shape {
    int N, C, V;
    Shard shard;
  };
  for (Shape s : {Shape{14, 128, 50, {20, 17}}, Shape{300, 64, 1000, {0, 333}},
                  Shape{7, 100, 20, {19, 1}}, Shape{514, 768, 1000, {667, 333}}}) {
    CAPTURE(s.N, s.C, s.V, s.shard.begin, s.shard.count);
    const size_t N = s.N, C = s.C, rows = s.shard.count;
    Twin table = twin(be, rng.bf16_values(rows * C, -1, 1));
    Twin tok = twin_raw(be, ids_with_edges(rng, {s.shard}, s.V, N));
    Twin out = twin(be, rng.bf16_values(N * C, -1, 1));  // written, not accumulated
    be.cpu->embedding_rows_forward(out.c.p, tok.c.i(), table.c.p, s.shard.begin, s.shard.count, s.N,
                                   s.C);
    be.gpu->embedding_rows_forward(out.g.p, tok.g.i(), table.g.p, s.shard.begin, s.shard.count, s.N,
                                   s.C);
    CHECK(differing(download(*be.gpu, out.g.p, N * C), download(*be.cpu, out.c.p, N * C)) == 0);

    // Backward adds into existing gradients (the table reused as the initial values).
    Twin dout = twin(be, rng.bf16_values(N * C, -1, 1));
    const Vec table0 = download(*be.gpu, table.g.p, rows * C);
    be.cpu->embedding_rows_backward(table.c.p, dout.c.p, tok.c.i(), s.shard.begin, s.shard.count,
                                    s.N, s.C);
    be.gpu->embedding_rows_backward(table.g.p, dout.g.p, tok.g.i(), s.shard.begin, s.shard.count,
                                    s.N, s.C);
    compare(be, table, rows * C, kRounding, "dtable", C);
    Buffer again = upload(*be.gpu, table0);
    be.gpu->embedding_rows_backward(again.p, dout.g.p, tok.g.i(), s.shard.begin, s.shard.count, s.N,
                                    s.C);
    CHECK(differing(download(*be.gpu, again.p, rows * C), download(*be.gpu, table.g.p, rows * C)) ==
          0);
  }
}

TEST_CASE("cuda sharded cross-entropy pieces match the cpu and combine to the fused loss",
          "[gpu][vocab_parallel]") {
  SKIP_WITHOUT_GPU();
  Backends be;
  Rng rng(22);
  struct Split {
    int N;
    std::vector<int> bounds;  // shard p is [bounds[p], bounds[p + 1])
  };
  for (const Split& sp : {Split{7, {0, 334, 667, 1000}}, Split{64, {0, 25152, 50304}},
                          Split{33, {0, 400, 1001}}, Split{5, {0, 1, 8}}}) {
    const int V = sp.bounds.back(), P = static_cast<int>(sp.bounds.size()) - 1;
    CAPTURE(sp.N, V, P);
    const size_t N = sp.N;
    const float dloss = 1.f / sp.N;
    std::vector<Shard> shards;
    for (int p = 0; p < P; ++p) shards.push_back({sp.bounds[p], sp.bounds[p + 1] - sp.bounds[p]});
    const Vec logits = rng.bf16_values(N * V, -4, 4);
    Twin targets = twin_raw(be, ids_with_edges(rng, shards, V, N));
    Twin parts = twin_f32(be, P * N), lse = twin_f32(be, N);
    Vec picked_sum(N, 0.f);
    std::vector<Twin> shard_logits;
    for (int p = 0; p < P; ++p) {
      const Shard s = shards[p];
      CAPTURE(s.begin, s.count);
      shard_logits.push_back(twin(be, columns(logits, N, V, s)));
      const Twin& x = shard_logits.back();
      Twin part = twin_f32(be, N), picked = twin_f32(be, N);
      for (Ops* ops : {be.cpu.get(), be.gpu.get()}) {
        const Buffer& xb = ops == be.cpu.get() ? x.c : x.g;
        const Buffer& pb = ops == be.cpu.get() ? part.c : part.g;
        const Buffer& kb = ops == be.cpu.get() ? picked.c : picked.g;
        const Buffer& tb = ops == be.cpu.get() ? targets.c : targets.g;
        const Buffer& all = ops == be.cpu.get() ? parts.c : parts.g;
        ops->logits_logsumexp(pb.f(), xb.p, sp.N, s.count);
        ops->logits_pick(kb.f(), xb.p, tb.i(), s.begin, sp.N, s.count);
        ops->copy(all.f() + p * N, pb.f(), N * sizeof(float));
      }
      compare_f32(be, part, N, 1e-4, "shard lse");
      const Vec gpu_picked = download_f32(*be.gpu, picked.g.f(), N);
      CHECK(differing(gpu_picked, download_f32(*be.cpu, picked.c.f(), N)) == 0);
      for (size_t n = 0; n < N; ++n) picked_sum[n] += gpu_picked[n];
    }

    be.cpu->logsumexp_merge(lse.c.f(), parts.c.f(), P, sp.N);
    be.gpu->logsumexp_merge(lse.g.f(), parts.g.f(), P, sp.N);
    compare_f32(be, lse, N, 1e-4, "merged lse");
    Twin picked = twin_raw(be, picked_sum), losses = twin_f32(be, N);
    be.cpu->losses_from_lse(losses.c.f(), lse.c.f(), picked.c.f(), sp.N);
    be.gpu->losses_from_lse(losses.g.f(), lse.g.f(), picked.g.f(), sp.N);
    compare_f32(be, losses, N, 1e-4, "losses");

    // The same loss and gradient, unsharded, on the GPU.
    Buffer whole = upload(*be.gpu, logits), fused_losses(*be.gpu, N * sizeof(float));
    be.gpu->cross_entropy_forward_backward(fused_losses.f(), whole.p, targets.g.i(), sp.N, V,
                                           dloss);
    expect_close(download_f32(*be.gpu, losses.g.f(), N), download_f32(*be.gpu, fused_losses.f(), N),
                 1e-4, "losses vs fused");
    const Vec fused_grad = download(*be.gpu, whole.p, N * V);
    Vec shard_grads(N * V);
    for (int p = 0; p < P; ++p) {
      const Shard s = shards[p];
      Twin& x = shard_logits[p];
      be.cpu->cross_entropy_backward_from_lse(x.c.p, lse.c.f(), targets.c.i(), s.begin, sp.N,
                                              s.count, dloss);
      be.gpu->cross_entropy_backward_from_lse(x.g.p, lse.g.f(), targets.g.i(), s.begin, sp.N,
                                              s.count, dloss);
      compare(be, x, N * s.count, 5e-3, "shard dlogits", s.count);
      const Vec g = download(*be.gpu, x.g.p, N * s.count);
      for (size_t n = 0; n < N; ++n)
        std::copy_n(g.begin() + n * s.count, s.count, shard_grads.begin() + n * V + s.begin);
    }
    expect_close(shard_grads, fused_grad, 5e-3, "shard dlogits vs fused", V);
  }

  // An empty shard: lse -inf, picks 0, the gradient untouched; the merge drops it.
  Buffer lse(*be.gpu, 3 * sizeof(float)), picked(*be.gpu, 3 * sizeof(float));
  Buffer targets = upload_raw(*be.gpu, std::vector<int>{0, 5, 9});
  be.gpu->logits_logsumexp(lse.f(), nullptr, 3, 0);
  be.gpu->logits_pick(picked.f(), nullptr, targets.i(), 5, 3, 0);
  be.gpu->cross_entropy_backward_from_lse(nullptr, lse.f(), targets.i(), 5, 3, 0, 1.f);
  for (float v : download_f32(*be.gpu, lse.f(), 3)) CHECK(v == -INFINITY);
  for (float v : download_f32(*be.gpu, picked.f(), 3)) CHECK(v == 0.f);
  Buffer parts = upload_raw(*be.gpu, Vec{-INFINITY, 2.f, 1000.f, 1000.f, -INFINITY, 1000.f});
  be.gpu->logsumexp_merge(parts.f(), parts.f(), 2, 3);  // in place
  const Vec merged = download_f32(*be.gpu, parts.f(), 3);
  CHECK(merged[0] == 1000.f);
  CHECK(merged[1] == 2.f);
  CHECK(merged[2] == Approx(1000 + std::log(2.0)).epsilon(1e-6));
  CHECK_THROWS_AS(be.gpu->logsumexp_merge(parts.f(), parts.f(), 0, 3), std::runtime_error);
}

}  // namespace zt
