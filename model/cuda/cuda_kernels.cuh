// Host-side launchers of the CUDA backend's kernel families, one .cu file each.
// CudaOps checks the arguments' meaning (shapes, head sizes); launchers check
// only what their kernels need, and enqueue everything on ctx.stream.
#pragma once
#include <cstddef>

#include "model/cuda/cuda_context.cuh"
#include "model/ops.h"

namespace zt {

// encoder.cu
void launch_encoder_forward(CudaContext& ctx, bf16* out, const int* tokens, const bf16* wte,
                            const bf16* wpe, int B, int T, int C);
void launch_encoder_backward(CudaContext& ctx, bf16* dwte, bf16* dwpe, const bf16* dout,
                             const int* tokens, int B, int T, int C);
// Vocabulary shards of the token embedding: rows [row_begin, row_begin + rows).
void launch_embedding_rows_forward(CudaContext& ctx, bf16* out, const int* tokens,
                                   const bf16* table, int row_begin, int rows, int N, int C);
void launch_embedding_rows_backward(CudaContext& ctx, bf16* dtable, const bf16* dout,
                                    const int* tokens, int row_begin, int rows, int N, int C);

// layernorm.cu
void launch_layernorm_forward(CudaContext& ctx, bf16* out, float* mean, float* rstd,
                              const bf16* inp, const bf16* w, const bf16* b, int N, int C);
void launch_residual_layernorm_forward(CudaContext& ctx, bf16* residual, bf16* out, float* mean,
                                       float* rstd, const bf16* a, const bf16* b, const bf16* w,
                                       const bf16* bias, int N, int C);
void launch_layernorm_backward(CudaContext& ctx, bf16* dinp, bf16* dw, bf16* db, const bf16* dout,
                               const bf16* inp, const bf16* w, const float* mean, const float* rstd,
                               int N, int C);

// matmul.cuh: the Matmul class (cuBLASLt) and its helper kernels.

// attention_forward.cu, attention_backward.cu (head size C / NH in {32, 64, 128})
void launch_attention_forward(CudaContext& ctx, bf16* out, float* lse, const bf16* qkv, int B,
                              int T, int C, int NH);
void launch_attention_backward(CudaContext& ctx, bf16* dqkv, const bf16* dout, const bf16* qkv,
                               const bf16* out, const float* lse, int B, int T, int C, int NH);

// cross_entropy.cu
void launch_cross_entropy_forward_backward(CudaContext& ctx, float* losses, bf16* logits,
                                           const int* targets, int N, int V, float dloss);
void launch_cross_entropy_forward(CudaContext& ctx, float* losses, const bf16* logits,
                                  const int* targets, int N, int V);
// The vocabulary-parallel pieces (a shard of V logit columns from col_begin; V may be 0).
void launch_logits_logsumexp(CudaContext& ctx, float* lse, const bf16* logits, int N, int V);
void launch_logits_pick(CudaContext& ctx, float* picked, const bf16* logits, const int* targets,
                        int col_begin, int N, int V);
void launch_logsumexp_merge(CudaContext& ctx, float* lse, const float* parts, int n_parts, int N);
void launch_losses_from_lse(CudaContext& ctx, float* losses, const float* lse, const float* picked,
                            int N);
void launch_cross_entropy_backward_from_lse(CudaContext& ctx, bf16* logits, const float* lse,
                                            const int* targets, int col_begin, int N, int V,
                                            float dloss);

// adamw.cu
void launch_adamw(CudaContext& ctx, bf16* param, float* master, const bf16* grad, float* m,
                  float* v, size_t n, const AdamWArgs& a);

// elementwise.cu
void launch_to_f32(CudaContext& ctx, float* dst, const bf16* src, size_t n);
void launch_from_f32(CudaContext& ctx, bf16* dst, const float* src, size_t n);
// fp32 / bf16 / fp16 into each other (round to nearest even), through fp32.
void launch_convert(CudaContext& ctx, void* dst, DType dst_t, const void* src, DType src_t,
                    size_t n);
void launch_add_inplace(CudaContext& ctx, bf16* dst, const bf16* src, size_t n);
// Sum of squares, deterministic; waits for the stream and returns the value.
double sum_squares_bf16(CudaContext& ctx, const bf16* x, size_t n);

// quantize.cu: DeviceServices::quantize_blocks / dequantize_blocks (model/device_services.h) on
// device buffers; x and out are F32, BF16 or F16, bits 8 or 4 (4 bits: n and block even), block >
// 0, all checked by CudaOps.
void launch_quantize_blocks(CudaContext& ctx, void* q, float* scales, const void* x, DType xt,
                            size_t n, size_t block, int bits);
void launch_dequantize_blocks(CudaContext& ctx, void* out, DType ot, const void* q,
                              const float* scales, size_t n, size_t block, int bits,
                              bool accumulate);

}  // namespace zt
