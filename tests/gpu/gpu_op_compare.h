// Shared by the [gpu] op tests: the CUDA backend against the CPU reference on
// the same inputs. Tensors are made on both backends with the same values
// (rounded to bf16 first, so both see the same numbers and the errors measured
// are the GPU's own) and compared by relative L2 error, whole and per row.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "model/device_services.h"
#include "model/ops.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"

namespace zt::gpu_test {

using Vec = std::vector<float>;

// Round to nearest even bf16, on the host (finite inputs).
inline float round_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);
  u &= 0xFFFF0000u;
  std::memcpy(&x, &u, 4);
  return x;
}

struct Rng {
  std::mt19937_64 gen;
  explicit Rng(uint64_t salt) : gen(test_rng(salt)) {}
  Vec bf16_values(size_t n, float lo, float hi) {
    std::uniform_real_distribution<float> d(lo, hi);
    Vec v(n);
    for (float& x : v) x = round_bf16(d(gen));
    return v;
  }
  std::vector<int> ints(size_t n, int hi) {
    std::uniform_int_distribution<int> d(0, hi - 1);
    std::vector<int> v(n);
    for (int& x : v) x = d(gen);
    return v;
  }
};

// A backend allocation released on scope exit.
struct Buffer {
  Ops* ops = nullptr;
  void* p = nullptr;
  Buffer(Ops& o, size_t bytes) : ops(&o), p(o.alloc(bytes, MemCategory::Activations)) {}
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& other) noexcept : ops(other.ops), p(other.p) { other.p = nullptr; }
  ~Buffer() {
    if (p) ops->release(p);
  }
  float* f() const { return static_cast<float*>(p); }
  int* i() const { return static_cast<int*>(p); }
};

// Model-dtype tensor holding `host` (fp32 on the CPU, bf16 via from_f32 on the GPU).
inline Buffer upload(Ops& ops, const Vec& host) {
  Buffer staging(ops, host.size() * sizeof(float));
  ops.from_host(staging.p, host.data(), host.size() * sizeof(float));
  if (ops.dtype() == DType::F32) return staging;
  Buffer out(ops, host.size() * dtype_size(ops.dtype()));
  ops.from_f32(out.p, staging.f(), host.size());
  ops.synchronize();
  return out;
}

// Raw copy of a host vector (fp32 side buffers, token ids).
template <typename T>
inline Buffer upload_raw(Ops& ops, const std::vector<T>& host) {
  Buffer b(ops, host.size() * sizeof(T));
  ops.from_host(b.p, host.data(), host.size() * sizeof(T));
  return b;
}

inline Vec download(Ops& ops, const void* p, size_t n) {
  Vec host(n);
  if (ops.dtype() == DType::F32) {
    ops.to_host(host.data(), p, n * sizeof(float));
    return host;
  }
  Buffer staging(ops, n * sizeof(float));
  ops.to_f32(staging.f(), p, n);
  ops.to_host(host.data(), staging.p, n * sizeof(float));
  return host;
}

inline Vec download_f32(Ops& ops, const float* p, size_t n) {
  Vec host(n);
  ops.to_host(host.data(), p, n * sizeof(float));
  return host;
}

// Squared L2 norms of got - want and of want over [begin, end).
inline std::pair<double, double> squared_norms(const Vec& got, const Vec& want, size_t begin,
                                               size_t end) {
  double num = 0, den = 0;
  for (size_t i = begin; i < end; ++i) {
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return {num, den};
}

// Elements that are not bit-identical (determinism checks).
inline size_t differing(const Vec& a, const Vec& b) {
  if (a.size() != b.size()) return std::max(a.size(), b.size());
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return n;
}

// Relative L2 error ||got - want|| / ||want||; with row_len, also the worst
// row's error, each row measured against at least the RMS row norm, which
// catches an error confined to a few rows (a tile edge, a mask).
inline void expect_close(const Vec& got, const Vec& want, double tol, const std::string& what,
                         size_t row_len = 0) {
  REQUIRE(got.size() == want.size());
  const auto [num, den] = squared_norms(got, want, 0, want.size());
  const double err = std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
  INFO(what << ": relative L2 error " << err << " (tolerance " << tol << ")");
  CHECK(err < tol);
  if (!row_len) return;
  const size_t rows = want.size() / row_len;
  const double floor = std::sqrt(den / std::max<size_t>(rows, 1));
  double worst = 0;
  for (size_t r = 0; r < rows; ++r) {
    const auto [rn, rd] = squared_norms(got, want, r * row_len, (r + 1) * row_len);
    worst = std::max(worst, std::sqrt(rn) / std::max({std::sqrt(rd), floor, 1e-30}));
  }
  INFO(what << ": worst row error " << worst << " (tolerance " << 5 * tol << ")");
  CHECK(worst < 5 * tol);
}

// The two backends a test compares; tensors are created on both with the same values.
struct Backends {
  std::unique_ptr<Ops> cpu = make_cpu_ops();
  std::unique_ptr<Ops> gpu = make_cuda_ops(0);
};

struct Twin {
  Buffer c, g;
};

inline Twin twin(Backends& be, const Vec& host) {
  return {upload(*be.cpu, host), upload(*be.gpu, host)};
}
inline Twin twin_f32(Backends& be, size_t n) {
  return {Buffer(*be.cpu, n * sizeof(float)), Buffer(*be.gpu, n * sizeof(float))};
}
template <typename T>
inline Twin twin_raw(Backends& be, const std::vector<T>& host) {
  return {upload_raw(*be.cpu, host), upload_raw(*be.gpu, host)};
}

// Compares a model-dtype twin (`row_len` as in expect_close).
inline void compare(Backends& be, const Twin& t, size_t n, double tol, const std::string& what,
                    size_t row_len = 0) {
  expect_close(download(*be.gpu, t.g.p, n), download(*be.cpu, t.c.p, n), tol, what, row_len);
}

inline void compare_f32(Backends& be, const Twin& t, size_t n, double tol,
                        const std::string& what) {
  expect_close(download_f32(*be.gpu, t.g.f(), n), download_f32(*be.cpu, t.c.f(), n), tol, what);
}

// Ops that round an fp32 result to bf16 once: each element is off by at most
// 2^-8 of itself, so the relative L2 error is below that too.
inline constexpr double kRounding = 1.0 / 256;

}  // namespace zt::gpu_test
