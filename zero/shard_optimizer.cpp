#include "zero/shard_optimizer.h"

#include <algorithm>
#include <cstring>

#include "model/host_floats.h"

namespace zt {
namespace {

// Host conversions between fp32 and the model dtype (fp32 or bf16).
void widen(float* dst, const void* src, DType t, size_t n) {
  if (t == DType::F32) {
    std::memcpy(dst, src, n * 4);
    return;
  }
  const uint16_t* s = static_cast<const uint16_t*>(src);
  for (size_t i = 0; i < n; i++) dst[i] = bf16_to_float(s[i]);
}
void narrow(void* dst, const float* src, DType t, size_t n) {
  if (t == DType::F32) {
    std::memcpy(dst, src, n * 4);
    return;
  }
  uint16_t* d = static_cast<uint16_t*>(dst);
  for (size_t i = 0; i < n; i++) d[i] = float_to_bf16(src[i]);
}

}  // namespace

ShardOptimizer::ShardOptimizer(std::vector<OptimPiece> pieces, size_t shard_size, Ops& ops,
                               const ZeroConfig& z, int rank)
    : ops_(ops), shard_(shard_size), es_(dtype_size(ops.dtype())), pieces_(std::move(pieces)),
      plan_(plan_optimizer_offload(z, shard_size, ops.dtype())) {
  if (z.offload_optimizer.enabled()) {
    offload_.reset(new OffloadedOptimizerState(plan_, z.offload_optimizer, rank, ops));
    host_adamw_.reset(new HostAdamW(default_host_threads()));
    return;
  }
  master_ = static_cast<float*>(ops_.alloc(shard_ * sizeof(float), MemCategory::Optimizer));
  m_ = static_cast<float*>(ops_.alloc(shard_ * sizeof(float), MemCategory::Optimizer));
  v_ = static_cast<float*>(ops_.alloc(shard_ * sizeof(float), MemCategory::Optimizer));
}

ShardOptimizer::~ShardOptimizer() {
  ops_.release(master_);
  ops_.release(m_);
  ops_.release(v_);
}

template <typename Fn>
void ShardOptimizer::overlaps(size_t begin, size_t n, Fn fn) const {
  for (const OptimPiece& p : pieces_) {
    const size_t lo = std::max(begin, p.shard_offset);
    const size_t hi = std::min(begin + n, p.shard_offset + p.n);
    if (lo < hi) fn(p, lo - p.shard_offset, hi - lo);
  }
}

void ShardOptimizer::init_master(const float* full_host) {
  if (offload_) {
    offload_->for_each_chunk(0, OffloadedOptimizerState::kAll,
                             [&](size_t c0, size_t n, float* master, float* m, float* v) {
                               std::fill(master, master + n, 0.0f);
                               std::fill(m, m + n, 0.0f);
                               std::fill(v, v + n, 0.0f);
                               overlaps(c0, n, [&](const OptimPiece& p, size_t first, size_t k) {
                                 const float* src = full_host + p.flat_begin + first;
                                 std::copy(src, src + k, master + (p.shard_offset + first - c0));
                               });
                             });
    return;
  }
  std::vector<float> host(shard_, 0.0f);
  for (const OptimPiece& p : pieces_)
    std::copy(full_host + p.flat_begin, full_host + p.flat_begin + p.n,
              host.begin() + p.shard_offset);
  ops_.from_host(master_, host.data(), shard_ * sizeof(float));
  ops_.memzero(m_, shard_ * sizeof(float));
  ops_.memzero(v_, shard_ * sizeof(float));
}

const void* ShardOptimizer::at(const void* base, Indexing how, const OptimPiece& p) const {
  const size_t off = how == Indexing::Flat ? p.layout_offset : p.shard_offset;
  return static_cast<const char*>(base) + off * es_;
}

void ShardOptimizer::put_params(const ParamOut& out, const OptimPiece& p, size_t from, size_t n,
                                const void* host) {
  if (out.store) out.store->write((p.shard_offset + from) * es_, n * es_, host);
  else
    ops_.from_host(static_cast<char*>(const_cast<void*>(at(out.buffer, out.where, p))) + from * es_,
                   host, n * es_);
}

void ShardOptimizer::write_params(void* params, Indexing where) {
  write_params_to({params, where, nullptr});
}
void ShardOptimizer::write_params(OffloadStore& params) {
  write_params_to({nullptr, Indexing::Shard, &params});
}

void ShardOptimizer::write_params_to(const ParamOut& out) {
  if (offload_) {
    offload_->for_each_chunk(
        OffloadedOptimizerState::kMaster, 0,
        [&](size_t c0, size_t n, float* master, float*, float*) {
          void* staged = es_ == 4 ? static_cast<void*>(master) : offload_->wire();
          if (es_ != 4) narrow(staged, master, ops_.dtype(), n);
          overlaps(c0, n, [&](const OptimPiece& p, size_t first, size_t k) {
            put_params(out, p, first, k,
                       static_cast<char*>(staged) + (p.shard_offset + first - c0) * es_);
          });
        });
    return;
  }
  for (const OptimPiece& p : pieces_) {
    if (!out.store) {
      ops_.from_f32(const_cast<void*>(at(out.buffer, out.where, p)), master_ + p.shard_offset, p.n);
      continue;
    }
    void* rounded = ops_.alloc(p.n * es_, MemCategory::CommBuffers);
    ops_.from_f32(rounded, master_ + p.shard_offset, p.n);
    std::vector<char> host(p.n * es_);
    ops_.to_host(host.data(), rounded, host.size());
    ops_.release(rounded);
    put_params(out, p, 0, p.n, host.data());
  }
}

std::vector<double> ShardOptimizer::grad_sum_squares(const void* grads, Indexing where,
                                                     int n_groups) {
  std::vector<double> s(n_groups, 0.0);
  for (const OptimPiece& p : pieces_) s[p.norm_group] += ops_.sum_squares(at(grads, where, p), p.n);
  return s;
}

void ShardOptimizer::step(const void* grads, Indexing grads_at, void* params, Indexing params_at,
                          const OptimSettings& s, float grad_scale, int t) {
  const ParamOut out{params, params_at, nullptr};
  if (offload_) step_offloaded(grads, grads_at, out, s, grad_scale, t);
  else step_on_device(grads, grads_at, out, s, grad_scale, t);
}
void ShardOptimizer::step(const void* grads, Indexing grads_at, OffloadStore& params,
                          const OptimSettings& s, float grad_scale, int t) {
  const ParamOut out{nullptr, Indexing::Shard, &params};
  if (offload_) step_offloaded(grads, grads_at, out, s, grad_scale, t);
  else step_on_device(grads, grads_at, out, s, grad_scale, t);
}

void ShardOptimizer::step_on_device(const void* grads, Indexing grads_at, const ParamOut& out,
                                    const OptimSettings& s, float grad_scale, int t) {
  for (const OptimPiece& p : pieces_) {
    AdamWArgs a{s.lr, s.beta1, s.beta2, s.eps, p.decay ? s.weight_decay : 0.0f, grad_scale, t};
    void* param = out.store ? ops_.alloc(p.n * es_, MemCategory::CommBuffers)
                            : const_cast<void*>(at(out.buffer, out.where, p));
    ops_.adamw(param, master_ + p.shard_offset, at(grads, grads_at, p), m_ + p.shard_offset,
               v_ + p.shard_offset, p.n, a);
    if (!out.store) continue;
    std::vector<char> host(p.n * es_);
    ops_.to_host(host.data(), param, host.size());
    ops_.release(param);
    put_params(out, p, 0, p.n, host.data());
  }
}

// Per chunk: each piece's gradients to the host (widened to fp32), the host
// AdamW, the rounded parameters back to where the engine keeps them.
void ShardOptimizer::step_offloaded(const void* grads, Indexing grads_at, const ParamOut& out,
                                    const OptimSettings& s, float grad_scale, int t) {
  float* g32 = offload_->grad32();
  float* p32 = offload_->param32();
  char* wire = static_cast<char*>(offload_->wire());
  offload_->for_each_chunk(
      OffloadedOptimizerState::kAll, OffloadedOptimizerState::kAll,
      [&](size_t c0, size_t n, float* master, float* m, float* v) {
        overlaps(c0, n, [&](const OptimPiece& p, size_t first, size_t k) {
          const size_t rel = p.shard_offset + first - c0;
          const char* src = static_cast<const char*>(at(grads, grads_at, p)) + first * es_;
          if (es_ == 4) {
            ops_.to_host(g32 + rel, src, k * 4);
          } else {
            ops_.to_host(wire + rel * es_, src, k * es_);
            widen(g32 + rel, wire + rel * es_, ops_.dtype(), k);
          }
          AdamWArgs a{s.lr,       s.beta1, s.beta2, s.eps, p.decay ? s.weight_decay : 0.0f,
                      grad_scale, t};
          host_adamw_->step(master + rel, g32 + rel, m + rel, v + rel, p32 + rel, k, a);
          if (es_ == 4) {
            put_params(out, p, first, k, p32 + rel);
          } else {
            narrow(wire + rel * es_, p32 + rel, ops_.dtype(), k);
            put_params(out, p, first, k, wire + rel * es_);
          }
        });
      });
}

void ShardOptimizer::save_state(std::vector<float>& master, std::vector<float>& m,
                                std::vector<float>& v) {
  master.resize(shard_);
  m.resize(shard_);
  v.resize(shard_);
  if (offload_) {
    offload_->for_each_chunk(OffloadedOptimizerState::kAll, 0,
                             [&](size_t c0, size_t n, float* cm, float* cmm, float* cv) {
                               std::copy(cm, cm + n, master.begin() + c0);
                               std::copy(cmm, cmm + n, m.begin() + c0);
                               std::copy(cv, cv + n, v.begin() + c0);
                             });
    return;
  }
  ops_.to_host(master.data(), master_, shard_ * sizeof(float));
  ops_.to_host(m.data(), m_, shard_ * sizeof(float));
  ops_.to_host(v.data(), v_, shard_ * sizeof(float));
}

void ShardOptimizer::load_state(const std::vector<float>& master, const std::vector<float>& m,
                                const std::vector<float>& v) {
  if (offload_) {
    offload_->for_each_chunk(0, OffloadedOptimizerState::kAll,
                             [&](size_t c0, size_t n, float* cm, float* cmm, float* cv) {
                               std::copy(master.begin() + c0, master.begin() + c0 + n, cm);
                               std::copy(m.begin() + c0, m.begin() + c0 + n, cmm);
                               std::copy(v.begin() + c0, v.begin() + c0 + n, cv);
                             });
    return;
  }
  ops_.from_host(master_, master.data(), shard_ * sizeof(float));
  ops_.from_host(m_, m.data(), shard_ * sizeof(float));
  ops_.from_host(v_, v.data(), shard_ * sizeof(float));
}

}  // namespace zt
