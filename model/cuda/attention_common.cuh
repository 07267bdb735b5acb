// Building blocks of the flash-attention kernels: asynchronous global->shared
// copies, ldmatrix fragment loads and the m16n8k16 bf16 tensor-core product
// (sm_80+ PTX, also the path on sm_90), plus the shared tile geometry.
//
// Fragment layouts of mma.m16n8k16 (g = lane / 4, q = lane % 4):
//   A 16x16, 4 regs of 2 bf16: a0 (row g, cols 2q..2q+1), a1 (row g+8, same cols),
//                              a2 (row g, cols 2q+8..), a3 (row g+8, cols 2q+8..)
//   B 16x8 (k x n), 2 regs:   b0 (rows k=2q..2q+1, col n=g), b1 (rows k=2q+8.., col g)
//   C 16x8 fp32, 4 regs:      c0,c1 (row g, cols 2q, 2q+1), c2,c3 (row g+8, same cols)
// A C fragment pair (two n8 blocks) thus has exactly the layout of an A fragment
// once packed to bf16, which is how P and dS feed the next product.
#pragma once
#include <cstdint>

#include "model/cuda/cuda_common.cuh"

namespace zt {
namespace attn {

constexpr int kTile = 64;  // queries per Q tile and keys per K/V tile
constexpr int kWarps = 4;  // each warp owns 16 rows of the block's tile
constexpr int kThreads = 32 * kWarps;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// Shared-memory rows are padded by 16 bytes so that the 8 row addresses of an
// ldmatrix phase fall in 8 different 16-byte bank groups.
template <int HS>
constexpr int smem_stride() {
  return HS + 8;
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte async copy; when !valid it writes 16 zero bytes and reads nothing.
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem),
               "r"(valid ? 16 : 0));
}

// 4-byte async copy with the same zero fill.
__device__ __forceinline__ void cp_async_4(void* smem, const void* gmem, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem),
               "r"(valid ? 4 : 0));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Four 8x8 bf16 matrices; lane L supplies the row address of matrix L / 8, row L % 8.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// c += a * b
__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// Fragment loaders over a row-major shared tile with row stride `stride`
// (elements). In each, `row0`/`col0` is the top-left corner of the 16x16 block.
//
// A operand (16 rows x 16 k) whose rows are the tile's rows.
__device__ __forceinline__ void load_a(uint32_t (&f)[4], const bf16* tile, int stride, int row0,
                                       int col0, int lane) {
  ldmatrix_x4(f, tile + (row0 + lane % 16) * stride + col0 + (lane / 16) * 8);
}

// B operands for two n8 blocks where n runs along the tile's rows and k along
// its columns (e.g. keys of K for S = Q K^T): f[0], f[1] = b0, b1 of rows
// row0..row0+7; f[2], f[3] = those of rows row0+8..row0+15.
__device__ __forceinline__ void load_b_rows(uint32_t (&f)[4], const bf16* tile, int stride,
                                            int row0, int col0, int lane) {
  ldmatrix_x4(f, tile + (row0 + lane % 8 + 8 * (lane / 16)) * stride + col0 + 8 * ((lane / 8) % 2));
}

// B operands for two n8 blocks where k runs along the tile's rows and n along
// its columns (e.g. V for O = P V): f[0], f[1] = b0, b1 of columns col0..col0+7;
// f[2], f[3] = those of columns col0+8..col0+15.
__device__ __forceinline__ void load_b_cols(uint32_t (&f)[4], const bf16* tile, int stride,
                                            int row0, int col0, int lane) {
  ldmatrix_x4_trans(
      f, tile + (row0 + lane % 8 + 8 * ((lane / 8) % 2)) * stride + col0 + 8 * (lane / 16));
}

// Copies rows [row0, row0 + 64) of one head (HS columns starting at `src`,
// row stride `src_stride` elements) into a padded shared tile; rows at or past
// `rows` are zero-filled. All threads of the block take part.
template <int HS>
__device__ __forceinline__ void load_tile_async(bf16* tile, const bf16* src, size_t src_stride,
                                                int row0, int rows) {
  constexpr int kChunks = HS / 8;  // 16-byte pieces per row
  for (int i = threadIdx.x; i < kTile * kChunks; i += kThreads) {
    const int r = i / kChunks, ch = i % kChunks;
    const bool valid = row0 + r < rows;
    const bf16* g = src + static_cast<size_t>(valid ? row0 + r : 0) * src_stride + ch * 8;
    cp_async_16(tile + r * smem_stride<HS>() + ch * 8, g, valid);
  }
}

// Writes a warp's 16 rows of a finished fp32 C-fragment tile (HS columns) to
// global memory through the warp's own rows of a shared staging tile, so that
// the global stores are 16-byte and row-contiguous. Rows at or past `rows` are
// skipped; `scale` multiplies every value.
template <int HS>
__device__ __forceinline__ void store_rows(bf16* dst, size_t dst_stride, int row0, int rows,
                                           const float (&acc)[HS / 8][4], float scale, bf16* stage,
                                           int warp, int lane) {
  constexpr int S = smem_stride<HS>();
  const int g = lane / 4, q = lane % 4;
  bf16* my = stage + warp * 16 * S;
#pragma unroll
  for (int nb = 0; nb < HS / 8; ++nb) {
    *reinterpret_cast<uint32_t*>(my + g * S + nb * 8 + 2 * q) =
        pack_bf16(acc[nb][0] * scale, acc[nb][1] * scale);
    *reinterpret_cast<uint32_t*>(my + (g + 8) * S + nb * 8 + 2 * q) =
        pack_bf16(acc[nb][2] * scale, acc[nb][3] * scale);
  }
  __syncwarp();
  constexpr int kChunks = HS / 8;
  for (int i = lane; i < 16 * kChunks; i += 32) {
    const int r = i / kChunks, ch = i % kChunks;
    const int row = row0 + warp * 16 + r;
    if (row < rows)
      *reinterpret_cast<uint4*>(dst + static_cast<size_t>(row) * dst_stride + ch * 8) =
          *reinterpret_cast<const uint4*>(my + r * S + ch * 8);
  }
}

}  // namespace attn
}  // namespace zt
