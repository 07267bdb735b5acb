// A ZeRO stage, as the training loop and the model see it. The model reaches
// parameters and gradient space through the ModuleHooks; the loop brackets
// each micro-step and calls step() at the accumulation boundary.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/module_hooks.h"
#include "model/ops.h"
#include "model/param_table.h"
#include "zero/comm/communicator.h"
#include "zero/grid/pipeline_schedule.h"
#include "zero/layout/param_groups.h"
#include "zero/optim/shard_optimizer.h"
#include "zero/stages/model_parallel_norm.h"
#include "zero/zero_config.h"

namespace zt {

// Everything a stage's schedule is built from, besides the model and the world.
struct ZeroSetup {
  ZeroConfig z;
  std::vector<ParamGroup> groups;   // train.param_groups (make_param_groups)
  std::vector<ModuleEvent> events;  // one training micro-step's events (GPT::training_events)
  double grad_clip = 0;             // stage 0 takes a norm across ranks only when clipping
  int ranks_per_node = 1;           // qgZ's local world (DeepSpeed: the node's device count)
  // With the model split across ranks (tensor parallelism): which tensors
  // this rank counts toward the gradient norm, and the group its sum of
  // squares is added over after ZeRO's own reduction. Default: none.
  ModelParallelNorm model_parallel;
  // With a pipeline: this stage's action list. Its forwards run outside the
  // micro-steps (stage 3 gathers for each as a pass of its own); only `plan`
  // reads it, to issue stage 3's calls in the order the run does.
  std::vector<PipeAction> pipeline_actions;
};

class ZeroEngine : public ModuleHooks {
 public:
  ~ZeroEngine() override = default;
  virtual int stage() const = 0;
  virtual std::string grad_path_key() const = 0;  // summary.json zero.grad_path
  virtual std::string describe() const = 0;       // the line rank 0 prints at start
  // Every rank passes the same full fp32 weights (host, model flat layout).
  virtual void init_weights(const float* full_host) = 0;
  virtual void begin_micro_step(int micro, int n_micro) = 0;
  virtual void end_micro_step() = 0;
  // Reduces what is left, clips to the setup's grad_clip (0: off), runs AdamW
  // (t from 1) and brings parameters up to date. Returns the global gradient
  // norm before clipping.
  virtual double step(const OptimSettings& s, int t) = 0;
  // After the optimizer state was loaded from a checkpoint: rebuild parameters.
  virtual void refresh_params_from_master() = 0;
  // Elements of ZeRO's layout, padding included (what the memory formulas count).
  virtual size_t padded_params() const = 0;

  // Stage 3 only: bytes of parameters kept whole on every rank, and the most
  // parameter bytes gathered at once.
  virtual uint64_t persistent_param_bytes() const { return 0; }
  virtual uint64_t live_params_peak_bytes() const { return 0; }
  // hpZ: the most bytes of secondary pieces held at once.
  virtual uint64_t hpz_secondary_peak_bytes() const { return 0; }
  // zero.offload_param on NVMe: parameter bytes the gathers found read ahead.
  virtual uint64_t param_read_ahead_bytes() const { return 0; }

  virtual ShardOptimizer& optimizer() = 0;
  // The world ranks that hold the same optimizer-state pieces as this rank,
  // ascending, this rank among them: every rank at stage 0, MiCS's replica
  // group at stage 3 (mics_groups.h), this rank alone otherwise. What a
  // recovery can copy a lost rank's state from; the first of them is the one
  // that writes the pieces to a checkpoint and contributes them to gathers.
  virtual std::vector<int> state_replicas() const = 0;
  // Collective: the full fp32 master weights on every rank (export, tests).
  std::vector<float> gather_master(Ops& ops, Communicator& comm, size_t total);
};

std::unique_ptr<ZeroEngine> make_zero_engine(const ZeroSetup& setup, const ParamTable& table,
                                             Ops& ops, Communicator& comm);

// The gradient arrival order of one micro-step's backward (its GradReady events).
std::vector<int> grad_ready_order(const std::vector<ModuleEvent>& events);
// The wire dtype of gradient reductions: zero.communication_data_type, or the model's.
DType gradient_wire_dtype(const ZeroConfig& z, DType model);

}  // namespace zt
