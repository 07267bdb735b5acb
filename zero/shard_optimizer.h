// AdamW on the part of the model a rank owns: fp32 master weights, m and v for
// each owned piece, updated by the backend's adamw op one tensor piece at a
// time (each piece has one weight-decay setting; padding is skipped). The
// gradient and parameter buffers it reads and writes are addressed either by
// ZeRO layout offset (full buffers, zero/flat_layout.h) or by shard offset
// (sharded buffers).
#pragma once
#include <cstdint>
#include <vector>

#include "model/ops.h"
#include "model/param_table.h"

namespace zt {

enum class Indexing { Flat, Shard };

struct OptimPiece {
  size_t flat_begin;     // in the model's flat layout (checkpoints, model files)
  size_t layout_offset;  // in ZeRO's full buffers (Indexing::Flat)
  size_t shard_offset;   // in this rank's shard (Indexing::Shard)
  size_t n;
  bool decay;
  int norm_group;  // which gradient norm it counts toward (a parameter group, or a sub-group)
};

struct OptimSettings {
  float lr, beta1, beta2, eps, weight_decay;
};

class ShardOptimizer {
 public:
  // pieces: model-layout flat ranges with their offsets in a shard of shard_size elements.
  ShardOptimizer(std::vector<OptimPiece> pieces, size_t shard_size, Ops& ops);
  ~ShardOptimizer();
  ShardOptimizer(const ShardOptimizer&) = delete;
  ShardOptimizer& operator=(const ShardOptimizer&) = delete;

  const std::vector<OptimPiece>& pieces() const { return pieces_; }
  size_t shard_size() const { return shard_; }
  // master <- the owned part of full fp32 weights (host), m = v = 0
  void init_master(const float* full_host);
  // Writes round(master) of every owned piece into `params`.
  void write_params(void* params, Indexing where);
  // Sum of squares of the owned gradient pieces, per norm group (n_groups of them).
  std::vector<double> grad_sum_squares(const void* grads, Indexing where, int n_groups);
  // One AdamW step (t from 1) with the gradient scaled by grad_scale.
  void step(const void* grads, Indexing grads_at, void* params, Indexing params_at,
            const OptimSettings& s, float grad_scale, int t);

  // Checkpoint access: host copies of master, m, v over the shard (shard offsets).
  void save_state(std::vector<float>& master, std::vector<float>& m, std::vector<float>& v);
  void load_state(const std::vector<float>& master, const std::vector<float>& m,
                  const std::vector<float>& v);

 private:
  const void* at(const void* base, Indexing how, const OptimPiece& p) const;
  Ops& ops_;
  size_t shard_;
  size_t es_;
  std::vector<OptimPiece> pieces_;
  float *master_, *m_, *v_;
};

}  // namespace zt
