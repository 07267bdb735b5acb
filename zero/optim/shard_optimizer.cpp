#include "zero/optim/shard_optimizer.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "model/cpu/cpu_matmul.h"
#include "model/device_services.h"
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
    host_adamw_.reset(new HostAdamW(cpu_threads()));
    reported_.assign(pieces_.size(), 0);
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

uint64_t ShardOptimizer::put_params(const ParamOut& out, const OptimPiece& p, size_t from, size_t n,
                                    const void* host, bool async) {
  if (out.store) {
    out.store->write((p.shard_offset + from) * es_, n * es_, host);
    return 0;
  }
  char* dst = static_cast<char*>(const_cast<void*>(at(out.buffer, out.where, p))) + from * es_;
  if (async) return ops_.services().from_host_async(dst, host, n * es_);
  ops_.from_host(dst, host, n * es_);
  return 0;
}

void ShardOptimizer::grads_final(const void* grads, Indexing where, size_t begin, size_t n) {
  if (!offload_) return;
  for (size_t i = 0; i < pieces_.size(); i++) {
    const OptimPiece& p = pieces_[i];
    const size_t start = where == Indexing::Flat ? p.layout_offset : p.shard_offset;
    const size_t lo = std::max(begin, start), hi = std::min(begin + n, start + p.n);
    if (lo >= hi) continue;
    grad_copies_ =
        ops_.services().to_host_async(offload_->host_grads() + (p.shard_offset + lo - start) * es_,
                                      static_cast<const char*>(grads) + lo * es_, (hi - lo) * es_);
    reported_[i] += hi - lo;
    reporting_.early += (hi - lo) * es_;
  }
}

void ShardOptimizer::settle_copies() noexcept {
  if (!offload_) return;
  try {
    ops_.services().wait_copy(grad_copies_);
  } catch (...) {  // a failing device: nothing left to protect
  }
}

void ShardOptimizer::gather_host_grads(const void* grads, Indexing grads_at) {
  for (size_t i = 0; i < pieces_.size(); i++) {
    const OptimPiece& p = pieces_[i];
    if (reported_[i] != p.n) {  // not (wholly) reported: copied now, in full
      grad_copies_ = ops_.services().to_host_async(offload_->host_grads() + p.shard_offset * es_,
                                                   at(grads, grads_at, p), p.n * es_);
      reporting_.at_step += p.n * es_;
    }
    reported_[i] = 0;
  }
  ops_.services().wait_copy(grad_copies_);
  grad_copy_bytes_ = reporting_;
  reporting_ = GradCopyBytes();
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
          void* staged = es_ == 4 ? static_cast<void*>(master) : offload_->upload(0);
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
  for (const OptimPiece& p : pieces_)
    if (p.in_norm) s[p.norm_group] += ops_.sum_squares(at(grads, where, p), p.n);
  return s;
}

bool ShardOptimizer::waited_instead_of_update() const {
  if (emulated_update_ms_ < 0) return false;
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(emulated_update_ms_));
  return true;
}

void ShardOptimizer::step(const void* grads, Indexing grads_at, void* params, Indexing params_at,
                          const OptimSettings& s, float grad_scale, int t) {
  if (waited_instead_of_update()) return;
  const ParamOut out{params, params_at, nullptr};
  if (offload_) step_offloaded(grads, grads_at, out, s, grad_scale, t);
  else step_on_device(grads, grads_at, out, s, grad_scale, t);
}
void ShardOptimizer::step(const void* grads, Indexing grads_at, OffloadStore& params,
                          const OptimSettings& s, float grad_scale, int t) {
  if (waited_instead_of_update()) return;
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

// The gradients are on the host first (gather_host_grads). Per chunk: the host
// AdamW on each piece, the rounded parameters into one of two upload buffers
// and on their way back (asynchronously to a backend buffer) while the next
// chunk computes; a buffer is reused once its previous upload is done.
void ShardOptimizer::step_offloaded(const void* grads, Indexing grads_at, const ParamOut& out,
                                    const OptimSettings& s, float grad_scale, int t) {
  gather_host_grads(grads, grads_at);
  const char* host_grads = offload_->host_grads();
  float* g32 = offload_->grad32();
  float* p32 = offload_->param32();
  uint64_t uploads[2] = {0, 0};
  int b = 0;
  offload_->for_each_chunk(
      OffloadedOptimizerState::kAll, OffloadedOptimizerState::kAll,
      [&](size_t c0, size_t n, float* master, float* m, float* v) {
        ops_.services().wait_copy(uploads[b]);
        char* up = offload_->upload(b);
        overlaps(c0, n, [&](const OptimPiece& p, size_t first, size_t k) {
          const size_t rel = p.shard_offset + first - c0;
          const char* g = host_grads + (p.shard_offset + first) * es_;
          AdamWArgs a{s.lr,       s.beta1, s.beta2, s.eps, p.decay ? s.weight_decay : 0.0f,
                      grad_scale, t};
          if (es_ == 4) {
            host_adamw_->step(master + rel, reinterpret_cast<const float*>(g), m + rel, v + rel,
                              reinterpret_cast<float*>(up) + rel, k, a);
          } else {
            widen(g32 + rel, g, ops_.dtype(), k);
            host_adamw_->step(master + rel, g32 + rel, m + rel, v + rel, p32 + rel, k, a);
            narrow(up + rel * es_, p32 + rel, ops_.dtype(), k);
          }
          const uint64_t ticket = put_params(out, p, first, k, up + rel * es_, true);
          if (ticket) uploads[b] = ticket;
        });
        b ^= 1;
      });
  ops_.services().wait_copy(std::max(uploads[0], uploads[1]));
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

const float* ShardOptimizer::host_state(int k) const {
  if (offload_ || ops_.on_device()) return nullptr;
  return k == 0 ? master_ : k == 1 ? m_ : v_;
}

}  // namespace zt
