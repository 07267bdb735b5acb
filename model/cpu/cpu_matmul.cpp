// The float GEMM of the CPU backend: OpenBLAS when the build found it, the
// project's blocked loop (cpu_matmul.h) otherwise.
#include "model/cpu/cpu_matmul.h"

#include <algorithm>
#include <atomic>
#include <thread>

#ifdef ZT_HAVE_BLAS
#include <cblas.h>
#endif

namespace zt {
namespace {
std::atomic<int> g_cpu_threads{0};  // 0: not set
}  // namespace

void set_cpu_threads(int n) {
  g_cpu_threads = n;
#ifdef ZT_HAVE_BLAS
  openblas_set_num_threads(n);
#endif
}

int cpu_threads() {
  const int n = g_cpu_threads;
  return n > 0 ? n : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

namespace cpu {

const char* cpu_matmul_backend() {
#ifdef ZT_HAVE_BLAS
  return "openblas";
#else
  return "blocked loop";
#endif
}

void gemm(bool trans_a, bool trans_b, int M, int N, int K, const float* A, int lda, const float* B,
          int ldb, bool accumulate, float* C, int ldc) {
#ifdef ZT_HAVE_BLAS
  if (M <= 0 || N <= 0) return;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, M, N, K, 1.0f, A, lda, B, ldb,
              accumulate ? 1.0f : 0.0f, C, ldc);
#else
  blocked_gemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, accumulate, C, ldc);
#endif
}

}  // namespace cpu
}  // namespace zt
