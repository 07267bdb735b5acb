// The CUDA backend against the CPU reference, op by op, forward and backward, on
// fresh random inputs at shapes that are not multiples of the kernels' tiles;
// plus bit-identical repeats of the backward ops that promise determinism.
// Inputs are rounded to bf16 first, so both backends see the same numbers and
// the errors measured are the GPU's own (bf16 outputs, fp32 accumulation).
// Without a usable GPU every test prints one SKIPPED line and passes.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "model/device_services.h"
#include "model/ops.h"
#include "tests/gpu/gpu_op_compare.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"

namespace zt {

using namespace gpu_test;

TEST_CASE("cuda backend: identity, zeroed allocations, ledger", "[gpu]") {
  SKIP_WITHOUT_GPU();
  auto gpu = make_cuda_ops(0);
  CHECK(gpu->name() == "cuda");
  CHECK(gpu->dtype() == DType::BF16);
  CHECK(gpu->on_device());
  const uint64_t before = gpu->ledger().current(MemCategory::Grads);
  void* p = gpu->alloc(1000 * sizeof(float), MemCategory::Grads);
  CHECK(gpu->ledger().current(MemCategory::Grads) == before + 4000);
  Vec host = download_f32(*gpu, static_cast<float*>(p), 1000);
  CHECK(std::all_of(host.begin(), host.end(), [](float x) { return x == 0.f; }));
  gpu->release(p);
  CHECK(gpu->ledger().current(MemCategory::Grads) == before);
}

TEST_CASE("cuda elementwise helpers", "[gpu]") {
  SKIP_WITHOUT_GPU();
  Backends be;
  Rng rng(1);
  for (size_t n : {size_t{1}, size_t{1001}, size_t{1} << 16}) {
    CAPTURE(n);
    // from_f32 rounds to nearest even, exactly like round_bf16 on the host.
    std::uniform_real_distribution<float> d(-3.f, 3.f);
    Vec raw(n);
    for (float& x : raw) x = d(rng.gen);
    Buffer f = upload_raw(*be.gpu, raw);
    Buffer h(*be.gpu, n * 2);
    be.gpu->from_f32(h.p, f.f(), n);
    Vec back = download(*be.gpu, h.p, n);
    size_t mismatches = 0;
    for (size_t i = 0; i < n; ++i) mismatches += back[i] != round_bf16(raw[i]);
    CHECK(mismatches == 0);

    Vec a = rng.bf16_values(n, -2, 2), b = rng.bf16_values(n, -2, 2);
    Twin ta = twin(be, a), tb = twin(be, b);
    be.cpu->services().add_inplace(ta.c.p, tb.c.p, n);
    be.gpu->services().add_inplace(ta.g.p, tb.g.p, n);
    compare(be, ta, n, kRounding, "add_inplace");
  }
  // Misaligned (odd element offset) buffers take the scalar path.
  Vec a = rng.bf16_values(999, -2, 2), b = rng.bf16_values(999, -2, 2);
  Twin ta = twin(be, a), tb = twin(be, b);
  be.cpu->services().add_inplace(ta.c.f() + 1, tb.c.f() + 3, 990);
  be.gpu->services().add_inplace(static_cast<uint16_t*>(ta.g.p) + 1,
                                 static_cast<uint16_t*>(tb.g.p) + 3, 990);
  compare(be, ta, 999, kRounding, "add_inplace misaligned");
}

TEST_CASE("cuda sum_squares is exact to fp32 accumulation and deterministic", "[gpu]") {
  SKIP_WITHOUT_GPU();
  Backends be;
  Rng rng(2);
  for (size_t n : {size_t{1}, size_t{1000}, (size_t{1} << 20) + 3}) {
    CAPTURE(n);
    Vec x = rng.bf16_values(n, -1, 1);
    Buffer g = upload(*be.gpu, x);
    double want = 0;
    for (float v : x) want += double(v) * v;
    const double got = be.gpu->sum_squares(g.p, n);
    CHECK(std::abs(got - want) <= 1e-5 * want);
    CHECK(be.gpu->sum_squares(g.p, n) == got);
    if (n > 8) {
      double tail = want - double(x[0]) * x[0];
      CHECK(std::abs(be.gpu->sum_squares(static_cast<uint16_t*>(g.p) + 1, n - 1) - tail) <=
            1e-5 * tail);
    }
  }
}

TEST_CASE("cuda encoder forward/backward match the cpu; backward is deterministic", "[gpu]") {
  SKIP_WITHOUT_GPU();
  Backends be;
  Rng rng(3);
  struct Shape {
    int B, T, C, V;
  };
  for (Shape s : {Shape{2, 7, 128, 50}, Shape{3, 100, 64, 10}, Shape{1, 1, 100, 5},
                  Shape{2, 257, 768, 1000}}) {
    CAPTURE(s.B, s.T, s.C, s.V);
    const size_t N = size_t(s.B) * s.T, C = s.C;
    Twin wte = twin(be, rng.bf16_values(size_t(s.V) * C, -1, 1));
    Twin wpe = twin(be, rng.bf16_values(size_t(s.T) * C, -1, 1));
    Twin tok = twin_raw(be, rng.ints(N, s.V));
    Twin out = twin(be, Vec(N * C, 0.f));
    be.cpu->encoder_forward(out.c.p, tok.c.i(), wte.c.p, wpe.c.p, s.B, s.T, s.C);
    be.gpu->encoder_forward(out.g.p, tok.g.i(), wte.g.p, wpe.g.p, s.B, s.T, s.C);
    compare(be, out, N * C, kRounding, "encoder out");

    // Backward adds into existing gradients (wte/wpe reused as the initial values).
    Twin dout = twin(be, rng.bf16_values(N * C, -1, 1));
    Vec wte0 = download(*be.gpu, wte.g.p, size_t(s.V) * C),
        wpe0 = download(*be.gpu, wpe.g.p, size_t(s.T) * C);
    be.cpu->encoder_backward(wte.c.p, wpe.c.p, dout.c.p, tok.c.i(), s.B, s.T, s.C);
    be.gpu->encoder_backward(wte.g.p, wpe.g.p, dout.g.p, tok.g.i(), s.B, s.T, s.C);
    compare(be, wte, size_t(s.V) * C, kRounding, "dwte");
    compare(be, wpe, size_t(s.T) * C, kRounding, "dwpe");
    Vec first = download(*be.gpu, wte.g.p, size_t(s.V) * C);
    Buffer again = upload(*be.gpu, wte0), again_pos = upload(*be.gpu, wpe0);
    be.gpu->encoder_backward(again.p, again_pos.p, dout.g.p, tok.g.i(), s.B, s.T, s.C);
    CHECK(differing(download(*be.gpu, again.p, size_t(s.V) * C), first) == 0);
    CHECK(differing(download(*be.gpu, again_pos.p, size_t(s.T) * C),
                    download(*be.gpu, wpe.g.p, size_t(s.T) * C)) == 0);
  }
}

TEST_CASE("cuda layernorm forward, residual forward and backward match the cpu", "[gpu]") {
  SKIP_WITHOUT_GPU();
  Backends be;
  Rng rng(4);
  struct Shape {
    int N, C;
  };
  for (Shape s : {Shape{1, 64}, Shape{7, 128}, Shape{300, 768}, Shape{33, 100}, Shape{64, 1600}}) {
    CAPTURE(s.N, s.C);
    const size_t n = size_t(s.N) * s.C;
    Twin a = twin(be, rng.bf16_values(n, -2, 3)), b = twin(be, rng.bf16_values(n, -1, 1));
    Twin w = twin(be, rng.bf16_values(s.C, 0.5f, 1.5f)),
         bias = twin(be, rng.bf16_values(s.C, -0.5f, 0.5f));
    Twin out = twin(be, Vec(n, 0.f)), res = twin(be, Vec(n, 0.f));
    Twin mean = twin_f32(be, s.N), rstd = twin_f32(be, s.N);
    be.cpu->layernorm_forward(out.c.p, mean.c.f(), rstd.c.f(), a.c.p, w.c.p, bias.c.p, s.N, s.C);
    be.gpu->layernorm_forward(out.g.p, mean.g.f(), rstd.g.f(), a.g.p, w.g.p, bias.g.p, s.N, s.C);
    compare(be, out, n, 5e-3, "layernorm out", s.C);
    compare_f32(be, mean, s.N, 1e-4, "mean");
    compare_f32(be, rstd, s.N, 1e-4, "rstd");

    be.cpu->residual_layernorm_forward(res.c.p, out.c.p, mean.c.f(), rstd.c.f(), a.c.p, b.c.p,
                                       w.c.p, bias.c.p, s.N, s.C);
    be.gpu->residual_layernorm_forward(res.g.p, out.g.p, mean.g.f(), rstd.g.f(), a.g.p, b.g.p,
                                       w.g.p, bias.g.p, s.N, s.C);
    compare(be, res, n, kRounding, "residual");
    compare(be, out, n, 5e-3, "residual layernorm out", s.C);
    compare_f32(be, rstd, s.N, 1e-3, "residual rstd");

    // Backward of the residual layernorm; every gradient starts non-zero (+=).
    Vec dinp0 = rng.bf16_values(n, -1, 1), dw0 = rng.bf16_values(s.C, -1, 1),
        db0 = rng.bf16_values(s.C, -1, 1);
    Twin dout = twin(be, rng.bf16_values(n, -1, 1));
    Twin dinp = twin(be, dinp0), dw = twin(be, dw0), db = twin(be, db0);
    be.cpu->layernorm_backward(dinp.c.p, dw.c.p, db.c.p, dout.c.p, res.c.p, w.c.p, mean.c.f(),
                               rstd.c.f(), s.N, s.C);
    be.gpu->layernorm_backward(dinp.g.p, dw.g.p, db.g.p, dout.g.p, res.g.p, w.g.p, mean.g.f(),
                               rstd.g.f(), s.N, s.C);
    compare(be, dinp, n, 1e-2, "layernorm dinp", s.C);
    compare(be, dw, s.C, 1e-2, "layernorm dw");
    compare(be, db, s.C, 1e-2, "layernorm db");

    Buffer dinp2 = upload(*be.gpu, dinp0), dw2 = upload(*be.gpu, dw0), db2 = upload(*be.gpu, db0);
    be.gpu->layernorm_backward(dinp2.p, dw2.p, db2.p, dout.g.p, res.g.p, w.g.p, mean.g.f(),
                               rstd.g.f(), s.N, s.C);
    CHECK(differing(download(*be.gpu, dinp2.p, n), download(*be.gpu, dinp.g.p, n)) == 0);
    CHECK(differing(download(*be.gpu, dw2.p, s.C), download(*be.gpu, dw.g.p, s.C)) == 0);
    CHECK(differing(download(*be.gpu, db2.p, s.C), download(*be.gpu, db.g.p, s.C)) == 0);
  }
}

TEST_CASE("cuda matmul forward (bias, fused GELU) and backward match the cpu", "[gpu]") {
  SKIP_WITHOUT_GPU();
  Backends be;
  Rng rng(5);
  struct Shape {
    int N, C, OC;
    bool bias, gelu;
  };
  for (Shape s : {Shape{1, 64, 192, true, false}, Shape{7, 128, 384, true, true},
                  Shape{300, 256, 768, true, true}, Shape{257, 64, 512, false, true},
                  Shape{100, 128, 100, true, true}, Shape{129, 96, 200, false, false}}) {
    CAPTURE(s.N, s.C, s.OC, s.bias, s.gelu);
    const size_t nin = size_t(s.N) * s.C, nout = size_t(s.N) * s.OC;
    Twin inp = twin(be, rng.bf16_values(nin, -1, 1));
    Twin w = twin(be, rng.bf16_values(size_t(s.OC) * s.C, -0.2f, 0.2f));
    Twin bias = twin(be, rng.bf16_values(s.OC, -0.5f, 0.5f));
    Twin out = twin(be, Vec(nout, 0.f)), pre = twin(be, Vec(nout, 0.f));
    auto fwd = [&](Ops& ops, Buffer& o, Buffer& p, Buffer& x, Buffer& wt, Buffer& bs) {
      ops.matmul_forward(o.p, s.gelu ? p.p : nullptr, x.p, wt.p, s.bias ? bs.p : nullptr, s.N, s.C,
                         s.OC);
    };
    fwd(*be.cpu, out.c, pre.c, inp.c, w.c, bias.c);
    fwd(*be.gpu, out.g, pre.g, inp.g, w.g, bias.g);
    compare(be, out, nout, 1e-2, "matmul out", s.OC);
    if (s.gelu) compare(be, pre, nout, 1e-2, "matmul pre_gelu", s.OC);

    // Backward as the layer after a GELU: dinp gets gelu'(pre) when fused.
    Vec dw0 = rng.bf16_values(size_t(s.OC) * s.C, -1, 1), db0 = rng.bf16_values(s.OC, -1, 1);
    Twin dout = twin(be, rng.bf16_values(nout, -1, 1));
    Twin in_pre = twin(be, rng.bf16_values(nin, -3, 3));
    Twin dinp = twin(be, Vec(nin, 0.f)), dw = twin(be, dw0), db = twin(be, db0);
    auto bwd = [&](Ops& ops, Buffer& di, Buffer& dwt, Buffer& dbs, Buffer& dy, Buffer& x,
                   Buffer& wt, Buffer& xp) {
      ops.matmul_backward(di.p, dwt.p, s.bias ? dbs.p : nullptr, dy.p, x.p, wt.p,
                          s.gelu ? xp.p : nullptr, s.N, s.C, s.OC);
    };
    bwd(*be.cpu, dinp.c, dw.c, db.c, dout.c, inp.c, w.c, in_pre.c);
    bwd(*be.gpu, dinp.g, dw.g, db.g, dout.g, inp.g, w.g, in_pre.g);
    compare(be, dinp, nin, 1e-2, "matmul dinp", s.C);
    compare(be, dw, size_t(s.OC) * s.C, 1e-2, "matmul dw", s.C);
    if (s.bias) compare(be, db, s.OC, 1e-2, "matmul dbias");

    Buffer dinp2(*be.gpu, nin * 2), dw2 = upload(*be.gpu, dw0), db2 = upload(*be.gpu, db0);
    bwd(*be.gpu, dinp2, dw2, db2, dout.g, inp.g, w.g, in_pre.g);
    CHECK(differing(download(*be.gpu, dinp2.p, nin), download(*be.gpu, dinp.g.p, nin)) == 0);
    CHECK(differing(download(*be.gpu, dw2.p, size_t(s.OC) * s.C),
                    download(*be.gpu, dw.g.p, size_t(s.OC) * s.C)) == 0);
    CHECK(differing(download(*be.gpu, db2.p, s.OC), download(*be.gpu, db.g.p, s.OC)) == 0);
  }
  // dinp may be null: only the parameter gradients.
  Twin x = twin(be, rng.bf16_values(64 * 32, -1, 1)),
       wt = twin(be, rng.bf16_values(48 * 32, -1, 1));
  Twin dy = twin(be, rng.bf16_values(64 * 48, -1, 1)), dw = twin(be, Vec(48 * 32, 0.f));
  be.cpu->matmul_backward(nullptr, dw.c.p, nullptr, dy.c.p, x.c.p, wt.c.p, nullptr, 64, 32, 48);
  be.gpu->matmul_backward(nullptr, dw.g.p, nullptr, dy.g.p, x.g.p, wt.g.p, nullptr, 64, 32, 48);
  compare(be, dw, 48 * 32, 1e-2, "matmul dw without dinp");
}

TEST_CASE("cuda flash attention forward/backward match the cpu; backward is deterministic",
          "[gpu]") {
  SKIP_WITHOUT_GPU();
  Backends be;
  Rng rng(6);
  const int B = 2, NH = 2;
  for (int hs : {32, 64, 128}) {
    for (int T : {1, 7, 64, 100, 257}) {
      // Amplitude 3 makes the softmax peaky, exercising the online rescaling.
      for (float amp : {1.f, 3.f}) {
        CAPTURE(hs, T, amp);
        const int C = hs * NH;
        const size_t n = size_t(B) * T * C, nlse = size_t(B) * NH * T;
        Twin qkv = twin(be, rng.bf16_values(3 * n, -amp, amp));
        Twin out = twin(be, Vec(n, 0.f)), lse = twin_f32(be, nlse);
        be.cpu->attention_forward(out.c.p, lse.c.f(), qkv.c.p, B, T, C, NH);
        be.gpu->attention_forward(out.g.p, lse.g.f(), qkv.g.p, B, T, C, NH);
        compare(be, out, n, 1e-2, "attention out", hs);
        compare_f32(be, lse, nlse, 1e-3, "attention lse");

        Twin dout = twin(be, rng.bf16_values(n, -1, 1));
        Twin dqkv = twin(be, rng.bf16_values(3 * n, -1, 1));  // overwritten, not accumulated
        be.cpu->attention_backward(dqkv.c.p, dout.c.p, qkv.c.p, out.c.p, lse.c.f(), B, T, C, NH);
        be.gpu->attention_backward(dqkv.g.p, dout.g.p, qkv.g.p, out.g.p, lse.g.f(), B, T, C, NH);
        compare(be, dqkv, 3 * n, 2e-2, "attention dqkv", hs);

        Buffer dqkv2(*be.gpu, 3 * n * 2);
        be.gpu->attention_backward(dqkv2.p, dout.g.p, qkv.g.p, out.g.p, lse.g.f(), B, T, C, NH);
        CHECK(differing(download(*be.gpu, dqkv2.p, 3 * n), download(*be.gpu, dqkv.g.p, 3 * n)) ==
              0);
      }
    }
  }
  // Head size 48 is not supported: a clear error, not a wrong answer.
  CHECK_THROWS_AS(be.gpu->attention_forward(nullptr, nullptr, nullptr, 1, 4, 96, 2),
                  std::runtime_error);
}

TEST_CASE("cuda fused cross-entropy matches the cpu; forward-only leaves logits", "[gpu]") {
  SKIP_WITHOUT_GPU();
  Backends be;
  Rng rng(7);
  struct Shape {
    int N, V;
  };
  for (Shape s : {Shape{7, 1000}, Shape{100, 50304}, Shape{33, 1001}, Shape{1, 8}}) {
    CAPTURE(s.N, s.V);
    const size_t n = size_t(s.N) * s.V;
    const float dloss = 1.f / s.N;
    Twin logits = twin(be, rng.bf16_values(n, -4, 4));
    Twin targets = twin_raw(be, rng.ints(s.N, s.V));
    Twin losses = twin_f32(be, s.N), eval_losses = twin_f32(be, s.N);
    const Vec before = download(*be.gpu, logits.g.p, n);
    be.gpu->cross_entropy_forward(eval_losses.g.f(), logits.g.p, targets.g.i(), s.N, s.V);
    CHECK(differing(download(*be.gpu, logits.g.p, n), before) == 0);

    be.cpu->cross_entropy_forward_backward(losses.c.f(), logits.c.p, targets.c.i(), s.N, s.V,
                                           dloss);
    be.gpu->cross_entropy_forward_backward(losses.g.f(), logits.g.p, targets.g.i(), s.N, s.V,
                                           dloss);
    compare_f32(be, losses, s.N, 1e-4, "losses");
    compare(be, logits, n, 5e-3, "dlogits", s.V);
    CHECK(differing(download_f32(*be.gpu, eval_losses.g.f(), s.N),
                    download_f32(*be.gpu, losses.g.f(), s.N)) == 0);
  }
}

TEST_CASE("cuda adamw matches the cpu over several steps, aligned or not", "[gpu]") {
  SKIP_WITHOUT_GPU();
  Backends be;
  Rng rng(8);
  for (size_t offset : {size_t{0}, size_t{1}}) {
    CAPTURE(offset);
    const size_t n = 10007, total = n + offset;
    const Vec master0 = rng.bf16_values(total, -1, 1);
    Twin param = twin(be, master0);
    Twin master = twin_raw(be, master0);
    const Vec m0 = rng.bf16_values(total, -0.01f, 0.01f), v0 = rng.bf16_values(total, 0.f, 1e-4f);
    Twin m = twin_raw(be, m0);
    Twin v = twin_raw(be, v0);
    for (int t = 1; t <= 3; ++t) {
      Twin grad = twin(be, rng.bf16_values(total, -1, 1));
      const AdamWArgs a{1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, t};
      be.cpu->adamw(param.c.f() + offset, master.c.f() + offset, grad.c.f() + offset,
                    m.c.f() + offset, v.c.f() + offset, n, a);
      be.gpu->adamw(static_cast<uint16_t*>(param.g.p) + offset, master.g.f() + offset,
                    static_cast<uint16_t*>(grad.g.p) + offset, m.g.f() + offset, v.g.f() + offset,
                    n, a);
    }
    compare_f32(be, master, total, 1e-6, "master");
    compare_f32(be, m, total, 1e-6, "m");
    compare_f32(be, v, total, 1e-6, "v");
    // The bf16 parameter is the rounded master weight.
    Vec want = download_f32(*be.gpu, master.g.f(), total);
    for (float& x : want) x = round_bf16(x);
    CHECK(differing(download(*be.gpu, param.g.p, total), want) == 0);
  }
}

}  // namespace zt
