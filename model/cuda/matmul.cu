// cuBLASLt glue for the linear layers. Row-major [rows, cols] buffers are
// column-major [cols, rows] to cuBLAS, so each product is written for the
// transposes (shapes below are cuBLAS's column-major views):
//   forward  out  D(OC x N)  = op_T(w: C x OC) * inp(C x N)
//   backward dinp D(C x N)   = w(C x OC) * dout(OC x N)
//   backward dw   D(C x OC) += inp(C x N) * op_T(dout: OC x N)
// The bias of the forward runs along D's rows (OC), which is what the BIAS
// epilogues add; the GELU input (pre_gelu, [N, OC] row-major) is the epilogue's
// aux matrix with leading dimension OC, and DGELU reads it back in the backward.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "model/cuda/matmul.cuh"

namespace zt {
namespace {

constexpr size_t kWorkspaceBytes = size_t{32} << 20;  // what cuBLAS suggests for Hopper

uint32_t alignment_of(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  uint32_t al = 256;
  while (al > 1 && a % al != 0) al /= 2;
  return al;
}

template <typename T>
void set_attr(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value) {
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)));
}

template <typename T>
void set_pref(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
              const T& value) {
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value)));
}

// Destroys whatever descriptors were created, also when a check throws.
struct LtDescriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtDescriptors() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

std::string shape_text(int m, int n, int k) {
  return "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k);
}

}  // namespace

struct Matmul::Gemm {
  bool trans_a = false, trans_b = false;
  int m = 0, n = 0, k = 0;
  const bf16* a = nullptr;
  int lda = 0;
  const bf16* b = nullptr;
  int ldb = 0;
  bf16* d = nullptr;
  int ldd = 0;
  float beta = 0.f;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const bf16* bias = nullptr;
  const void* aux = nullptr;
  int64_t ld_aux = 0;
};

Matmul::Matmul(CudaContext& ctx, MemoryLedger& ledger) : ctx_(ctx), ledger_(ledger) {
  CUBLAS_CHECK(cublasLtCreate(&handle_));
  cudaError_t err = cudaMalloc(&workspace_, kWorkspaceBytes);
  if (err != cudaSuccess) {
    cublasLtDestroy(handle_);
    throw_cuda_error(cudaGetErrorString(err), "cudaMalloc(cuBLASLt workspace)", __FILE__, __LINE__);
  }
  workspace_bytes_ = kWorkspaceBytes;
  ledger_.on_alloc(workspace_, workspace_bytes_, MemCategory::Activations);
}

Matmul::~Matmul() {
  ledger_.on_free(workspace_);
  cudaFree(workspace_);
  cublasLtDestroy(handle_);
}

bool Matmul::gemm(const Gemm& g) {
  LtDescriptors ds;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&ds.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t ta = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  set_attr(ds.op, CUBLASLT_MATMUL_DESC_TRANSA, ta);
  set_attr(ds.op, CUBLASLT_MATMUL_DESC_TRANSB, tb);
  set_attr(ds.op, CUBLASLT_MATMUL_DESC_EPILOGUE, g.epilogue);
  if (g.bias) {
    set_attr(ds.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(g.bias));
    set_attr(ds.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<int32_t>(CUDA_R_16BF));
  }
  if (g.aux) {
    set_attr(ds.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, g.aux);
    set_attr(ds.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, g.ld_aux);
  }
  // Stored (untransposed) shapes, column-major.
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&ds.a, CUDA_R_16BF, g.trans_a ? g.k : g.m,
                                          g.trans_a ? g.m : g.k, g.lda));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&ds.b, CUDA_R_16BF, g.trans_b ? g.n : g.k,
                                          g.trans_b ? g.k : g.n, g.ldb));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&ds.d, CUDA_R_16BF, g.m, g.n, g.ldd));

  const uint32_t al_a = alignment_of(g.a), al_b = alignment_of(g.b), al_d = alignment_of(g.d);
  const std::vector<int64_t> key = {g.trans_a,
                                    g.trans_b,
                                    g.m,
                                    g.n,
                                    g.k,
                                    g.lda,
                                    g.ldb,
                                    g.ldd,
                                    g.beta != 0.f,
                                    g.epilogue,
                                    al_a,
                                    al_b,
                                    al_d,
                                    g.bias ? alignment_of(g.bias) : 0,
                                    g.aux ? alignment_of(g.aux) : 0,
                                    g.ld_aux};
  auto it = algos_.find(key);
  if (it == algos_.end()) {
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&ds.pref));
    set_pref(ds.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
             static_cast<uint64_t>(workspace_bytes_));
    set_pref(ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, al_a);
    set_pref(ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, al_b);
    set_pref(ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, al_d);
    set_pref(ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, al_d);
    // Split-k partial sums only in fp32 workspace: never summed in bf16 in place.
    set_pref(ds.pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
             static_cast<uint32_t>(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle_, ds.op, ds.a, ds.b, ds.d, ds.d,
                                                             ds.pref, 1, &result, &found);
    std::optional<cublasLtMatmulAlgo_t> algo;
    if (st == CUBLAS_STATUS_SUCCESS && found > 0) algo = result.algo;
    it = algos_.emplace(key, algo).first;
  }
  if (!it->second) return false;
  const float alpha = 1.f, beta = g.beta;
  CUBLAS_CHECK(cublasLtMatmul(handle_, ds.op, &alpha, g.a, ds.a, g.b, ds.b, &beta, g.d, ds.d, g.d,
                              ds.d, &*it->second, workspace_, workspace_bytes_, ctx_.stream));
  return true;
}

void Matmul::forward(bf16* out, bf16* pre_gelu, const bf16* inp, const bf16* w, const bf16* bias,
                     int N, int C, int OC) {
  if (N == 0 || OC == 0) return;
  Gemm g;
  g.trans_a = true;
  g.m = OC;
  g.n = N;
  g.k = C;
  g.a = w;
  g.lda = C;
  g.b = inp;
  g.ldb = C;
  g.d = out;
  g.ldd = OC;
  if (pre_gelu) {
    g.epilogue = bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
    g.bias = bias;
    g.aux = pre_gelu;
    g.ld_aux = OC;
    // cuBLASLt wants the aux leading dimension divisible by 8.
    if (OC % 8 == 0 && aligned_to(pre_gelu, 16) && gemm(g)) return;
  } else if (bias) {
    g.epilogue = CUBLASLT_EPILOGUE_BIAS;
    g.bias = bias;
    if (gemm(g)) return;
  }
  // Plain product, then bias and GELU in a separate pass.
  Gemm plain = g;
  plain.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  plain.bias = nullptr;
  plain.aux = nullptr;
  plain.ld_aux = 0;
  plain.d = pre_gelu ? pre_gelu : out;
  if (!gemm(plain))
    throw std::runtime_error("matmul_forward: cuBLASLt has no algorithm for " +
                             shape_text(OC, N, C));
  if (pre_gelu || bias) launch_bias_gelu(ctx_, out, pre_gelu, plain.d, bias, N, OC);
}

void Matmul::backward(bf16* dinp, bf16* dw, bf16* dbias, const bf16* dout, const bf16* inp,
                      const bf16* w, const bf16* inp_pre_gelu, int N, int C, int OC) {
  if (N == 0 || C == 0 || OC == 0) return;
  if (dbias) launch_bias_grad(ctx_, dbias, dout, N, OC);

  if (dinp) {
    Gemm g;
    g.m = C;
    g.n = N;
    g.k = OC;
    g.a = w;
    g.lda = C;
    g.b = dout;
    g.ldb = OC;
    g.d = dinp;
    g.ldd = C;
    bool done = false;
    if (inp_pre_gelu && C % 8 == 0 && aligned_to(inp_pre_gelu, 16)) {
      g.epilogue = CUBLASLT_EPILOGUE_DGELU;
      g.aux = inp_pre_gelu;
      g.ld_aux = C;
      done = gemm(g);
      g.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
      g.aux = nullptr;
      g.ld_aux = 0;
    }
    if (!done) {
      if (!gemm(g))
        throw std::runtime_error("matmul_backward (dinp): cuBLASLt has no algorithm for " +
                                 shape_text(C, N, OC));
      if (inp_pre_gelu)
        launch_gelu_backward_inplace(ctx_, dinp, inp_pre_gelu, static_cast<size_t>(N) * C);
    }
  }

  Gemm g;
  g.trans_b = true;
  g.m = C;
  g.n = OC;
  g.k = N;
  g.a = inp;
  g.lda = C;
  g.b = dout;
  g.ldb = OC;
  g.d = dw;
  g.ldd = C;
  g.beta = 1.f;
  if (!gemm(g))
    throw std::runtime_error("matmul_backward (dw): cuBLASLt has no algorithm for " +
                             shape_text(C, OC, N));
}

}  // namespace zt
