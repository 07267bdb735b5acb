// AdamW on the part of the model a rank owns: fp32 master weights, m and v for
// each owned piece, updated one tensor piece at a time (each piece has one
// weight-decay setting; padding is skipped). The gradient and parameter
// buffers it reads and writes are addressed either by ZeRO layout offset (full
// buffers, zero/layout/flat_layout.h) or by shard offset (sharded buffers).
//
// The state lives in device memory and is updated by the backend's adamw op,
// or, with zero.offload_optimizer, in host memory or files
// (zero/optim/offload_optimizer.h) and is updated chunk by chunk by the host AdamW
// (zero/optim/host_adamw.h). Gradients come to the host as the engine reports them
// final (grads_final, during the last backward, on the copy stream), parameters
// go back one chunk while the host AdamW computes the next.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "model/ops.h"
#include "model/param_table.h"
#include "zero/optim/host_adamw.h"
#include "zero/optim/offload_optimizer.h"
#include "zero/optim/offload_store.h"
#include "zero/zero_config.h"

namespace zt {

enum class Indexing { Flat, Shard };

struct OptimPiece {
  size_t flat_begin;     // in the model's flat layout (checkpoints, model files)
  size_t layout_offset;  // in ZeRO's full buffers (Indexing::Flat)
  size_t shard_offset;   // in this rank's shard (Indexing::Shard)
  size_t n;
  bool decay;
  int norm_group;  // which gradient norm it counts toward (a parameter group, or a sub-group)
  // False where its tensor is a copy of one another model-parallel rank counts
  // (zero/stages/model_parallel_norm.h): left out of the sums of squares.
  bool in_norm = true;
};

struct OptimSettings {
  float lr, beta1, beta2, eps, weight_decay;
};

class ShardOptimizer {
 public:
  // pieces: model-layout flat ranges with their offsets in a shard of
  // shard_size elements; z: its offload_optimizer (and sub_group_size, the
  // streaming unit); rank names the offload directory.
  ShardOptimizer(std::vector<OptimPiece> pieces, size_t shard_size, Ops& ops,
                 const ZeroConfig& z = ZeroConfig(), int rank = 0);
  ~ShardOptimizer();
  ShardOptimizer(const ShardOptimizer&) = delete;
  ShardOptimizer& operator=(const ShardOptimizer&) = delete;

  const std::vector<OptimPiece>& pieces() const { return pieces_; }
  size_t shard_size() const { return shard_; }
  bool offloaded() const { return offload_ != nullptr; }
  // master <- the owned part of full fp32 weights (host), m = v = 0
  void init_master(const float* full_host);
  // Writes round(master) of every owned piece into `params` (backend memory),
  // or into a shard kept off the device (zero.offload_param, shard offsets).
  void write_params(void* params, Indexing where);
  void write_params(OffloadStore& params);
  // ZeRO-Offload: [begin, begin + n) of `grads` (in where's offsets) holds final
  // gradients, so their copy to the host starts now, overlapping whatever the
  // device does next; the step copies what no engine reported. No-op unless
  // offloaded. Each element is reported at most once per step.
  void grads_final(const void* grads, Indexing where, size_t begin, size_t n);
  // The last step's gradient bytes moved to the host: reported early, and at the step.
  struct GradCopyBytes {
    uint64_t early = 0, at_step = 0;
  };
  const GradCopyBytes& grad_copy_bytes() const { return grad_copy_bytes_; }
  // Waits for gradient copies still in flight (reported, no step since): an
  // engine calls it before it frees the gradients they read.
  void settle_copies() noexcept;
  // Sum of squares of the owned gradient pieces that count toward the norm
  // (in_norm), per norm group (n_groups of them).
  std::vector<double> grad_sum_squares(const void* grads, Indexing where, int n_groups);
  // One AdamW step (t from 1) with the gradient scaled by grad_scale.
  void step(const void* grads, Indexing grads_at, void* params, Indexing params_at,
            const OptimSettings& s, float grad_scale, int t);
  void step(const void* grads, Indexing grads_at, OffloadStore& params, const OptimSettings& s,
            float grad_scale, int t);

  // Compute emulation (system.compute: emulate): every later step() sleeps
  // for `ms` instead of updating; master weights and parameters stay as they are.
  void wait_instead_of_update(double ms) { emulated_update_ms_ = ms; }

  // Checkpoint access: host copies of master, m, v over the shard (shard offsets).
  void save_state(std::vector<float>& master, std::vector<float>& m, std::vector<float>& v);
  void load_state(const std::vector<float>& master, const std::vector<float>& m,
                  const std::vector<float>& v);
  // State array k (0 master, 1 m, 2 v; shard offsets) where the host can read
  // it in place, as in-memory snapshots do beside the next step's compute: a
  // host backend's, not offloaded. nullptr otherwise.
  const float* host_state(int k) const;

 private:
  // Where updated parameters go: a backend buffer, or an off-device shard.
  struct ParamOut {
    void* buffer;
    Indexing where;
    OffloadStore* store;
  };
  const void* at(const void* base, Indexing how, const OptimPiece& p) const;
  void step_on_device(const void* grads, Indexing grads_at, const ParamOut& out,
                      const OptimSettings& s, float grad_scale, int t);
  void step_offloaded(const void* grads, Indexing grads_at, const ParamOut& out,
                      const OptimSettings& s, float grad_scale, int t);
  void write_params_to(const ParamOut& out);
  // Compute emulation: sleeps the stated update time; false for a real update.
  bool waited_instead_of_update() const;
  // Model-dtype values of [from, from + n) of piece p (host) to their place in
  // `out`; to a backend buffer asynchronously when `async` (returns the copy's
  // ticket, else 0).
  uint64_t put_params(const ParamOut& out, const OptimPiece& p, size_t from, size_t n,
                      const void* host, bool async = false);
  // The step's start: copies the gradients no engine reported, waits for all.
  void gather_host_grads(const void* grads, Indexing grads_at);
  // Calls fn(piece, first, count) for the part of each piece inside [begin, begin + n).
  template <typename Fn>
  void overlaps(size_t begin, size_t n, Fn fn) const;

  Ops& ops_;
  size_t shard_;
  size_t es_;
  std::vector<OptimPiece> pieces_;
  OptimizerOffloadPlan plan_;
  float *master_ = nullptr, *m_ = nullptr, *v_ = nullptr;  // device state (not offloaded)
  std::unique_ptr<OffloadedOptimizerState> offload_;
  std::unique_ptr<HostAdamW> host_adamw_;
  std::vector<size_t> reported_;  // per piece: elements whose copy grads_final started
  uint64_t grad_copies_ = 0;      // ticket of the last one
  GradCopyBytes grad_copy_bytes_, reporting_;
  double emulated_update_ms_ = -1;  // < 0: a real update
};

}  // namespace zt
