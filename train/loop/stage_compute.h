// What a pipeline stage computes (train/loop/pipeline_step.h): the stage's
// model on real tensors, or its emulation (docs/compute_emulation.md), whose
// passes fire the same hook events with timed waits in between and whose
// messages are real buffers of the real size, so that the pipeline's
// schedule, ZeRO and every message run as they would.
#pragma once
#include <memory>
#include <vector>

#include "model/emulated_gpt.h"
#include "model/gpt.h"

namespace zt {

class StageCompute {
 public:
  virtual ~StageCompute() = default;
  // Micro-batch activations into slot `slot` (GPT::stage_forward's contract).
  virtual void forward(int slot, const int* inputs, const int* targets, GPT::Head head, float dloss,
                       ModuleHooks& hooks) = 0;
  virtual void backward(int slot, ModuleHooks& hooks) = 0;
  // The slot's token losses summed (the last stage; 0 where there is none).
  virtual double loss_sum(int slot) = 0;
  // The residual stream at the stage's boundaries, boundary_elems() each.
  virtual size_t boundary_elems() const = 0;
  virtual void* stage_input(int slot) = 0;
  virtual const void* stage_output(int slot) const = 0;
  virtual void* output_grad() = 0;
  virtual const void* input_grad(int slot) const = 0;
  virtual const ParamTable& table() const = 0;
  virtual int tokens() const = 0;  // B x T per micro-batch
};

// The stage's model itself.
std::unique_ptr<StageCompute> real_stage(GPT& model);

// The stage's emulation: `model`'s passes with waits, and the boundary
// buffers of a B x T micro-batch per slot, allocated from `ops` (counted as
// activations).
std::unique_ptr<StageCompute> emulated_stage(const ParamTable& table, EmulatedGPT& model, Ops& ops,
                                             int B, int T, int slots);

}  // namespace zt
