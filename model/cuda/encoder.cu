// Token + position embedding, and the token embedding's vocabulary shards
// (tensor parallelism): forward lookup and deterministic backward.
#include <cub/device/device_radix_sort.cuh>
#include <limits>

#include "model/cuda/cuda_kernels.cuh"

namespace zt {
namespace {

constexpr int kThreads = 256;

// out[b,t,:] = wte[tokens[b,t],:] + wpe[t,:]; with wte null the row already in
// out stands for the token embedding (out += wpe), with wpe null nothing is
// added. One thread per VEC consecutive channels of one row; neighbouring
// threads take neighbouring channel groups, so a warp reads and writes
// contiguous bytes.
template <int VEC>
__global__ void encoder_forward_kernel(bf16* out, const int* tokens, const bf16* wte,
                                       const bf16* wpe, int N, int T, int C) {
  const int groups = C / VEC;
  const size_t idx = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (idx >= static_cast<size_t>(N) * groups) return;
  const int row = static_cast<int>(idx / groups);
  const int c = static_cast<int>(idx % groups) * VEC;
  const int t = row % T;
  float acc[VEC], pos[VEC] = {};
  bf16* dst = out + static_cast<size_t>(row) * C + c;
  load_bf16<VEC>(acc, wte ? wte + static_cast<size_t>(tokens[row]) * C + c : dst);
  if (wpe) load_bf16<VEC>(pos, wpe + static_cast<size_t>(t) * C + c);
#pragma unroll
  for (int i = 0; i < VEC; ++i) acc[i] += pos[i];
  store_bf16<VEC>(dst, acc);
}

// Vocabulary shard lookup: out[n,:] = table[tokens[n] - row_begin,:] when the
// token lies in [row_begin, row_begin + rows), zeros otherwise (every row is
// written, so the shards' outputs sum to the full lookup). Same layout and
// threads as encoder_forward_kernel: one thread per VEC channels of one row.
template <int VEC>
__global__ void embedding_rows_forward_kernel(bf16* out, const int* tokens, const bf16* table,
                                              int row_begin, int rows, int N, int C) {
  const int groups = C / VEC;
  const size_t idx = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (idx >= static_cast<size_t>(N) * groups) return;
  const int row = static_cast<int>(idx / groups);
  const int c = static_cast<int>(idx % groups) * VEC;
  const long long local = static_cast<long long>(tokens[row]) - row_begin;
  float v[VEC] = {};
  if (local >= 0 && local < rows) load_bf16<VEC>(v, table + static_cast<size_t>(local) * C + c);
  store_bf16<VEC>(out + static_cast<size_t>(row) * C + c, v);
}

// dwpe[t,:] += sum over b of dout[b,t,:]. One thread per (t, channel group);
// it walks the batch in order, so the sum is the same on every run.
template <int VEC>
__global__ void encoder_backward_wpe_kernel(bf16* dwpe, const bf16* dout, int B, int T, int C) {
  const int groups = C / VEC;
  const size_t idx = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (idx >= static_cast<size_t>(T) * groups) return;
  const int t = static_cast<int>(idx / groups);
  const int c = static_cast<int>(idx % groups) * VEC;
  float acc[VEC] = {};
  for (int b = 0; b < B; ++b) {
    float d[VEC];
    load_bf16<VEC>(d, dout + (static_cast<size_t>(b) * T + t) * C + c);
#pragma unroll
    for (int i = 0; i < VEC; ++i) acc[i] += d[i];
  }
  bf16* dst = dwpe + static_cast<size_t>(t) * C + c;
  float cur[VEC];
  load_bf16<VEC>(cur, dst);
#pragma unroll
  for (int i = 0; i < VEC; ++i) cur[i] += acc[i];
  store_bf16<VEC>(dst, cur);
}

__global__ void iota_kernel(int* v, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = i;
}

// dwte[tok - row_begin,:] += sum of dout rows whose token is tok, for tokens in
// [row_begin, row_begin + rows) (the whole table: row_begin 0, rows INT_MAX).
// The (token, row) pairs were stably sorted by token, so equal tokens form runs
// with rows ascending. One thread per (sorted position, channel group); only
// the first position of each run inside the shard works: it sums the run's rows
// in order (fp32) and updates dwte once. No two threads touch the same dwte
// row, and the order is fixed: deterministic.
template <int VEC>
__global__ void encoder_backward_wte_kernel(bf16* dwte, const bf16* dout, const int* sorted_tokens,
                                            const int* sorted_rows, int row_begin, int rows, int N,
                                            int C) {
  const int groups = C / VEC;
  const size_t idx = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (idx >= static_cast<size_t>(N) * groups) return;
  const int i = static_cast<int>(idx / groups);
  const int c = static_cast<int>(idx % groups) * VEC;
  const int tok = sorted_tokens[i];
  if (i > 0 && sorted_tokens[i - 1] == tok) return;
  const long long local = static_cast<long long>(tok) - row_begin;
  if (local < 0 || local >= rows) return;
  float acc[VEC] = {};
  for (int j = i; j < N && sorted_tokens[j] == tok; ++j) {
    float d[VEC];
    load_bf16<VEC>(d, dout + static_cast<size_t>(sorted_rows[j]) * C + c);
#pragma unroll
    for (int k = 0; k < VEC; ++k) acc[k] += d[k];
  }
  bf16* dst = dwte + static_cast<size_t>(local) * C + c;
  float cur[VEC];
  load_bf16<VEC>(cur, dst);
#pragma unroll
  for (int k = 0; k < VEC; ++k) cur[k] += acc[k];
  store_bf16<VEC>(dst, cur);
}

unsigned grid_for(size_t threads) {
  return static_cast<unsigned>(ceil_div(threads, static_cast<size_t>(kThreads)));
}

size_t round_up_256(size_t bytes) { return (bytes + 255) / 256 * 256; }

// dtable[tok - row_begin,:] += the dout rows of each token tok in [row_begin,
// row_begin + rows): a stable radix sort of (token, row) pairs by token in
// scratch, then encoder_backward_wte_kernel over the runs. N > 0 and C > 0.
void accumulate_table_rows(CudaContext& ctx, bf16* dtable, const bf16* dout, const int* tokens,
                           int row_begin, int rows, int N, int C) {
  size_t sort_bytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, sort_bytes, tokens, static_cast<int*>(nullptr), static_cast<const int*>(nullptr),
      static_cast<int*>(nullptr), N, 0, 32, ctx.stream));
  const size_t ints = round_up_256(static_cast<size_t>(N) * sizeof(int));
  char* base = static_cast<char*>(ctx.scratch->get(3 * ints + sort_bytes, ctx.stream));
  int* sorted_tokens = reinterpret_cast<int*>(base);
  int* row_ids = reinterpret_cast<int*>(base + ints);
  int* sorted_rows = reinterpret_cast<int*>(base + 2 * ints);
  void* sort_tmp = base + 3 * ints;

  iota_kernel<<<ceil_div(N, kThreads), kThreads, 0, ctx.stream>>>(row_ids, N);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(sort_tmp, sort_bytes, tokens, sorted_tokens, row_ids,
                                             sorted_rows, N, 0, 32, ctx.stream));
  if (C % 8 == 0 && aligned_to(dtable, 16) && aligned_to(dout, 16)) {
    encoder_backward_wte_kernel<8>
        <<<grid_for(static_cast<size_t>(N) * C / 8), kThreads, 0, ctx.stream>>>(
            dtable, dout, sorted_tokens, sorted_rows, row_begin, rows, N, C);
  } else {
    encoder_backward_wte_kernel<1>
        <<<grid_for(static_cast<size_t>(N) * C), kThreads, 0, ctx.stream>>>(
            dtable, dout, sorted_tokens, sorted_rows, row_begin, rows, N, C);
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_encoder_forward(CudaContext& ctx, bf16* out, const int* tokens, const bf16* wte,
                            const bf16* wpe, int B, int T, int C) {
  const int N = B * T;
  if (N == 0 || C == 0) return;
  const bool vec = C % 8 == 0 && aligned_to(out, 16) && aligned_to(wte, 16) && aligned_to(wpe, 16);
  if (vec) {
    encoder_forward_kernel<8>
        <<<grid_for(static_cast<size_t>(N) * C / 8), kThreads, 0, ctx.stream>>>(out, tokens, wte,
                                                                                wpe, N, T, C);
  } else {
    encoder_forward_kernel<1><<<grid_for(static_cast<size_t>(N) * C), kThreads, 0, ctx.stream>>>(
        out, tokens, wte, wpe, N, T, C);
  }
  CUDA_CHECK_LAUNCH();
}

void launch_encoder_backward(CudaContext& ctx, bf16* dwte, bf16* dwpe, const bf16* dout,
                             const int* tokens, int B, int T, int C) {
  const int N = B * T;
  if (N == 0 || C == 0) return;
  const bool vec = C % 8 == 0 && aligned_to(dwpe, 16) && aligned_to(dout, 16);
  if (dwpe) {
    if (vec) {
      encoder_backward_wpe_kernel<8>
          <<<grid_for(static_cast<size_t>(T) * C / 8), kThreads, 0, ctx.stream>>>(dwpe, dout, B, T,
                                                                                  C);
    } else {
      encoder_backward_wpe_kernel<1>
          <<<grid_for(static_cast<size_t>(T) * C), kThreads, 0, ctx.stream>>>(dwpe, dout, B, T, C);
    }
    CUDA_CHECK_LAUNCH();
  }
  if (dwte)
    accumulate_table_rows(ctx, dwte, dout, tokens, 0, std::numeric_limits<int>::max(), N, C);
}

void launch_embedding_rows_forward(CudaContext& ctx, bf16* out, const int* tokens,
                                   const bf16* table, int row_begin, int rows, int N, int C) {
  if (N == 0 || C == 0) return;
  if (C % 8 == 0 && aligned_to(out, 16) && aligned_to(table, 16)) {
    embedding_rows_forward_kernel<8>
        <<<grid_for(static_cast<size_t>(N) * C / 8), kThreads, 0, ctx.stream>>>(
            out, tokens, table, row_begin, rows, N, C);
  } else {
    embedding_rows_forward_kernel<1>
        <<<grid_for(static_cast<size_t>(N) * C), kThreads, 0, ctx.stream>>>(out, tokens, table,
                                                                            row_begin, rows, N, C);
  }
  CUDA_CHECK_LAUNCH();
}

void launch_embedding_rows_backward(CudaContext& ctx, bf16* dtable, const bf16* dout,
                                    const int* tokens, int row_begin, int rows, int N, int C) {
  if (N == 0 || C == 0 || rows == 0) return;
  accumulate_table_rows(ctx, dtable, dout, tokens, row_begin, rows, N, C);
}

}  // namespace zt
