// The CPU matmul core: one row-major GEMM entry point per element type.
//
//   C[M,N] = op(A)[M,K] * op(B)[K,N]          (accumulate == false)
//   C[M,N] = C + op(A)[M,K] * op(B)[K,N]      (accumulate == true)
//
// op(A) is A (stored M x K, row stride lda) or, with trans_a, A^T (A stored K x M).
// Likewise for B. The float overload goes to OpenBLAS (cblas_sgemm) when the build
// defines ZT_HAVE_BLAS and to blocked_gemm otherwise; the double overload (used by
// the float64 reference in the tests) always runs blocked_gemm.
#pragma once
#include <algorithm>
#include <cstddef>
#include <vector>

namespace zt {

// The threads a rank may keep busy on this machine's cores (the runtime sets it
// once: cores / ranks sharing them, train/loop/runtime.cpp): OpenBLAS's thread
// count for the CPU matmuls and the host AdamW's workers. The project's own
// loops are single-threaded so that their results never depend on it.
void set_cpu_threads(int n);
// What was set; all of this machine's cores before that.
int cpu_threads();

namespace cpu {

// "openblas" or "blocked loop": what the float GEMM runs on, for run summaries.
const char* cpu_matmul_backend();

void gemm(bool trans_a, bool trans_b, int M, int N, int K, const float* A, int lda, const float* B,
          int ldb, bool accumulate, float* C, int ldc);

// Cache-blocked GEMM (GotoBLAS-style, single-threaded, deterministic).
// Strategy: the K x N problem is cut into kKc x kNc blocks of op(B) and each block
// is packed into column panels of kNr contiguous values per k; for each kMc-row
// block of op(A), rows are packed into panels of kMr values per k. A kMr x kNr
// micro-kernel then runs over a packed A panel and a packed B panel with all its
// accumulators in registers: per k it loads kNr values of B, broadcasts kMr values
// of A and does kMr*kNr multiply-adds in fixed-width loops that gcc vectorizes at
// -O2. Panels are zero-padded at the edges, so the micro-kernel never branches;
// only the store back to C clips. The order of the additions into each C element
// depends on the shapes alone, so equal inputs give bit-identical outputs.
namespace blocked {
constexpr int kMr = 4, kNr = 8;                // register tile
constexpr int kMc = 64, kKc = 128, kNc = 256;  // cache blocks (A block in L1, B block in L2)

// Copies rows [i0, i0+rows) x columns [k0, k0+depth) of op(A) into panels of kMr
// rows: panel p holds, for each k, the kMr values of rows i0+p*kMr.. (zero-padded).
template <typename Real>
void pack_a(Real* dst, const Real* A, int lda, bool trans_a, int i0, int rows, int k0, int depth) {
  for (int p = 0; p < rows; p += kMr) {
    for (int k = 0; k < depth; ++k) {
      for (int r = 0; r < kMr; ++r) {
        int i = i0 + p + r;
        bool inside = p + r < rows;
        *dst++ = !inside   ? Real(0)
                 : trans_a ? A[static_cast<size_t>(k0 + k) * lda + i]
                           : A[static_cast<size_t>(i) * lda + k0 + k];
      }
    }
  }
}

// Copies rows [k0, k0+depth) x columns [j0, j0+cols) of op(B) into panels of kNr
// columns: panel p holds, for each k, the kNr values of columns j0+p*kNr.. (zero-padded).
template <typename Real>
void pack_b(Real* dst, const Real* B, int ldb, bool trans_b, int k0, int depth, int j0, int cols) {
  for (int p = 0; p < cols; p += kNr) {
    for (int k = 0; k < depth; ++k) {
      for (int u = 0; u < kNr; ++u) {
        int j = j0 + p + u;
        bool inside = p + u < cols;
        *dst++ = !inside   ? Real(0)
                 : trans_b ? B[static_cast<size_t>(j) * ldb + k0 + k]
                           : B[static_cast<size_t>(k0 + k) * ldb + j];
      }
    }
  }
}

// acc[kMr][kNr] = sum over k of a_panel[k][r] * b_panel[k][u]; then C (+)= acc,
// clipped to rows x cols.
template <typename Real>
void micro_kernel(const Real* __restrict a_panel, const Real* __restrict b_panel, int depth,
                  Real* C, int ldc, int rows, int cols, bool add_to_c) {
  Real acc[kMr][kNr] = {};
  for (int k = 0; k < depth; ++k) {
    const Real* a = a_panel + static_cast<size_t>(k) * kMr;
    const Real* b = b_panel + static_cast<size_t>(k) * kNr;
    for (int r = 0; r < kMr; ++r) {
      for (int u = 0; u < kNr; ++u) acc[r][u] += a[r] * b[u];
    }
  }
  for (int r = 0; r < rows; ++r) {
    Real* c = C + static_cast<size_t>(r) * ldc;
    if (add_to_c) {
      for (int u = 0; u < cols; ++u) c[u] += acc[r][u];
    } else {
      for (int u = 0; u < cols; ++u) c[u] = acc[r][u];
    }
  }
}
}  // namespace blocked

template <typename Real>
void blocked_gemm(bool trans_a, bool trans_b, int M, int N, int K, const Real* A, int lda,
                  const Real* B, int ldb, bool accumulate, Real* C, int ldc) {
  using namespace blocked;
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    if (!accumulate) {
      for (int i = 0; i < M; ++i) {
        Real* c = C + static_cast<size_t>(i) * ldc;
        std::fill(c, c + N, Real(0));
      }
    }
    return;
  }
  auto round_up = [](int x, int m) { return (x + m - 1) / m * m; };
  std::vector<Real> b_packed(static_cast<size_t>(kKc) * round_up(std::min(N, kNc), kNr));
  std::vector<Real> a_packed(static_cast<size_t>(kKc) * round_up(std::min(M, kMc), kMr));
  for (int j0 = 0; j0 < N; j0 += kNc) {
    int cols = std::min(kNc, N - j0);
    for (int k0 = 0; k0 < K; k0 += kKc) {
      int depth = std::min(kKc, K - k0);
      // The first k block overwrites C unless the caller accumulates.
      bool add_to_c = accumulate || k0 > 0;
      pack_b(b_packed.data(), B, ldb, trans_b, k0, depth, j0, cols);
      for (int i0 = 0; i0 < M; i0 += kMc) {
        int rows = std::min(kMc, M - i0);
        pack_a(a_packed.data(), A, lda, trans_a, i0, rows, k0, depth);
        for (int jp = 0; jp < cols; jp += kNr) {
          const Real* b_panel = b_packed.data() + static_cast<size_t>(jp) * depth;
          for (int ip = 0; ip < rows; ip += kMr) {
            const Real* a_panel = a_packed.data() + static_cast<size_t>(ip) * depth;
            Real* c = C + static_cast<size_t>(i0 + ip) * ldc + j0 + jp;
            micro_kernel(a_panel, b_panel, depth, c, ldc, std::min(kMr, rows - ip),
                         std::min(kNr, cols - jp), add_to_c);
          }
        }
      }
    }
  }
}

inline void gemm(bool trans_a, bool trans_b, int M, int N, int K, const double* A, int lda,
                 const double* B, int ldb, bool accumulate, double* C, int ldc) {
  blocked_gemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, accumulate, C, ldc);
}

}  // namespace cpu
}  // namespace zt
