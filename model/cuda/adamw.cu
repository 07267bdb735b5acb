// AdamW over one contiguous segment: fp32 master weights and moments, bf16
// gradient (scaled by grad_scale) and bf16 parameter copy (round to nearest).
//
// Memory-bound: grid-stride over groups of VEC = 4 elements (16-byte fp32 and
// 8-byte bf16 accesses) when every pointer allows it; the remainder, or a
// misaligned segment (ZeRO shards start anywhere), goes element by element.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "model/cuda/cuda_kernels.cuh"

namespace zt {
namespace {

struct AdamWConsts {
  float lr, beta1, beta2, eps, weight_decay, grad_scale;
  float bias_corr1, bias_corr2;  // 1 - beta^t
};

template <int VEC>
__device__ __forceinline__ void adamw_update(bf16* param, float* master, const bf16* grad, float* m,
                                             float* v, size_t i, const AdamWConsts& k) {
  float g[VEC], w[VEC], mm[VEC], vv[VEC];
  load_bf16<VEC>(g, grad + i);
  load_f32<VEC>(w, master + i);
  load_f32<VEC>(mm, m + i);
  load_f32<VEC>(vv, v + i);
#pragma unroll
  for (int j = 0; j < VEC; ++j) {
    const float gj = g[j] * k.grad_scale;
    mm[j] = k.beta1 * mm[j] + (1.f - k.beta1) * gj;
    vv[j] = k.beta2 * vv[j] + (1.f - k.beta2) * gj * gj;
    const float m_hat = mm[j] / k.bias_corr1;
    const float v_hat = vv[j] / k.bias_corr2;
    w[j] -= k.lr * (m_hat / (sqrtf(v_hat) + k.eps) + k.weight_decay * w[j]);
  }
  store_f32<VEC>(master + i, w);
  store_f32<VEC>(m + i, mm);
  store_f32<VEC>(v + i, vv);
  store_bf16<VEC>(param + i, w);
}

template <int VEC>
__global__ void adamw_kernel(bf16* param, float* master, const bf16* grad, float* m, float* v,
                             size_t n, AdamWConsts k) {
  const size_t groups = n / VEC;
  const size_t tid = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = tid; i < groups; i += stride)
    adamw_update<VEC>(param, master, grad, m, v, i * VEC, k);
  const size_t tail = groups * VEC + tid;
  if (tail < n) adamw_update<1>(param, master, grad, m, v, tail, k);
}

}  // namespace

void launch_adamw(CudaContext& ctx, bf16* param, float* master, const bf16* grad, float* m,
                  float* v, size_t n, const AdamWArgs& a) {
  if (n == 0) return;
  if (a.t < 1)
    throw std::runtime_error("adamw: step t = " + std::to_string(a.t) + ", expected >= 1");
  AdamWConsts k;
  k.lr = a.lr;
  k.beta1 = a.beta1;
  k.beta2 = a.beta2;
  k.eps = a.eps;
  k.weight_decay = a.weight_decay;
  k.grad_scale = a.grad_scale;
  k.bias_corr1 = static_cast<float>(1.0 - std::pow(static_cast<double>(a.beta1), a.t));
  k.bias_corr2 = static_cast<float>(1.0 - std::pow(static_cast<double>(a.beta2), a.t));

  const int threads = 256;
  const bool vec = aligned_to(param, 8) && aligned_to(grad, 8) && aligned_to(master, 16) &&
                   aligned_to(m, 16) && aligned_to(v, 16);
  const size_t groups = vec ? n / 4 : n;
  const size_t blocks = std::max<size_t>(1, std::min(ceil_div(groups, static_cast<size_t>(threads)),
                                                     static_cast<size_t>(ctx.num_sms) * 8));
  if (vec) {
    adamw_kernel<4><<<static_cast<unsigned>(blocks), threads, 0, ctx.stream>>>(param, master, grad,
                                                                               m, v, n, k);
  } else {
    adamw_kernel<1><<<static_cast<unsigned>(blocks), threads, 0, ctx.stream>>>(param, master, grad,
                                                                               m, v, n, k);
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace zt
