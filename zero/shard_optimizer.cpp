#include "zero/shard_optimizer.h"

#include <algorithm>

namespace zt {

ShardOptimizer::ShardOptimizer(std::vector<OptimPiece> pieces, size_t shard_size, Ops& ops)
    : ops_(ops), shard_(shard_size), es_(dtype_size(ops.dtype())), pieces_(std::move(pieces)) {
  master_ = static_cast<float*>(ops_.alloc(shard_ * sizeof(float), MemCategory::Optimizer));
  m_ = static_cast<float*>(ops_.alloc(shard_ * sizeof(float), MemCategory::Optimizer));
  v_ = static_cast<float*>(ops_.alloc(shard_ * sizeof(float), MemCategory::Optimizer));
}

ShardOptimizer::~ShardOptimizer() {
  ops_.release(master_);
  ops_.release(m_);
  ops_.release(v_);
}

void ShardOptimizer::init_master(const float* full_host) {
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

void ShardOptimizer::write_params(void* params, Indexing where) {
  for (const OptimPiece& p : pieces_)
    ops_.from_f32(const_cast<void*>(at(params, where, p)), master_ + p.shard_offset, p.n);
}

std::vector<double> ShardOptimizer::grad_sum_squares(const void* grads, Indexing where,
                                                     int n_groups) {
  std::vector<double> s(n_groups, 0.0);
  for (const OptimPiece& p : pieces_) s[p.norm_group] += ops_.sum_squares(at(grads, where, p), p.n);
  return s;
}

void ShardOptimizer::step(const void* grads, Indexing grads_at, void* params, Indexing params_at,
                          const OptimSettings& s, float grad_scale, int t) {
  for (const OptimPiece& p : pieces_) {
    AdamWArgs a{s.lr, s.beta1, s.beta2, s.eps, p.decay ? s.weight_decay : 0.0f, grad_scale, t};
    ops_.adamw(const_cast<void*>(at(params, params_at, p)), master_ + p.shard_offset,
               at(grads, grads_at, p), m_ + p.shard_offset, v_ + p.shard_offset, p.n, a);
  }
}

void ShardOptimizer::save_state(std::vector<float>& master, std::vector<float>& m,
                                std::vector<float>& v) {
  master.resize(shard_);
  m.resize(shard_);
  v.resize(shard_);
  ops_.to_host(master.data(), master_, shard_ * sizeof(float));
  ops_.to_host(m.data(), m_, shard_ * sizeof(float));
  ops_.to_host(v.data(), v_, shard_ * sizeof(float));
}

void ShardOptimizer::load_state(const std::vector<float>& master, const std::vector<float>& m,
                                const std::vector<float>& v) {
  ops_.from_host(master_, master.data(), shard_ * sizeof(float));
  ops_.from_host(m_, m.data(), shard_ * sizeof(float));
  ops_.from_host(v_, v.data(), shard_ * sizeof(float));
}

}  // namespace zt
