// One optimizer step through this rank's pipeline stage (docs/pipeline.md):
// the stage's action list (zero/grid/pipeline_schedule.h) run in order, the
// activations and their gradients as counted point-to-point messages over
// the pipeline group (MPI_Isend/Irecv; NCCL send/recv), each micro-batch's
// activations in a slot of the stage's model or its emulation
// (train/loop/stage_compute.h; micro-batch k in slot k mod slots, slots =
// the list's peak in flight). Sends are posted and left
// running; a slot's send is waited for only before the slot is written again,
// and every send before the step ends.
//
// ZeRO sees each micro-batch's backward as its micro-step (begin/end around
// it). The tied embedding's copies on the first and the last stage have
// their gradients summed after the schedule, one message each way (the sum
// of Megatron's embedding all-reduce over those two ranks, before ZeRO's
// reduction rather than after: the same sum), so the last backward's wte
// gradient reaches ZeRO only then and the last micro-step ends after it.
#pragma once
#include <functional>
#include <vector>

#include "train/loop/sampler.h"
#include "train/loop/stage_compute.h"
#include "zero/comm/comm_stats.h"
#include "zero/grid/pipeline_schedule.h"
#include "zero/stages/engine.h"

namespace zt {

// What one step measured on this stage.
struct PipelineStepResult {
  double loss_sum = 0;     // the micro-batches' token losses (last stage; 0 elsewhere)
  double recv_wait_s = 0;  // blocked in receives: the stage's bubble and the transfers
};

class PipelineStage {
 public:
  // `pipeline` runs over this rank's pipeline group (its rank: the stage).
  PipelineStage(PipelineSchedule schedule, int micro_batches, CountingCommunicator& pipeline,
                Ops& ops);
  ~PipelineStage();
  PipelineStage(const PipelineStage&) = delete;
  PipelineStage& operator=(const PipelineStage&) = delete;

  int stage() const { return stage_; }
  int stages() const { return stages_; }
  bool first() const { return stage_ == 0; }
  bool last() const { return stage_ == stages_ - 1; }
  // Activation slots the stage model needs: the list's peak in flight.
  int slots() const { return peak_in_flight(actions_); }
  const std::vector<PipeAction>& actions() const { return actions_; }

  // One optimizer step's micro-batches: load(k, in, tgt) fills micro-batch
  // k's B x T tokens into in and tgt (every stage loads them; the first reads
  // the inputs, the last the targets).
  PipelineStepResult train(StageCompute& model, ZeroEngine& engine, ModuleHooks& hooks,
                           const std::function<void(int, int*, int*)>& load, float dloss);
  // One batch's forward and loss through the stages: the sum of its token
  // losses on the last stage, 0 elsewhere.
  double evaluate(StageCompute& model, ModuleHooks& hooks, const int* in, const int* tgt);
  // Text through the stages (sample_tokens' window and draws): per token, the
  // window's rows go forward stage by stage, the last stage draws the token
  // from its logits and broadcasts it over the pipeline group, so every
  // stage returns the same tokens. `model` is the stage's (B >= 1, T = seq_len).
  std::vector<int> sample(GPT& model, ModuleHooks& hooks, std::vector<int> prompt,
                          const SampleSettings& s);
  // One forward of `model`'s B x T inputs and targets through the stages; the
  // last stage broadcasts its token losses over the pipeline group, so every
  // stage returns them (HellaSwag's scoring).
  const std::vector<float>& forward_losses(GPT& model, ModuleHooks& hooks, const int* in,
                                           const int* tgt);

 private:
  void relay(void* input, const void* output, size_t n, const std::function<void()>& forward);
  void sum_tied_embedding_grads(ModuleHooks& hooks, const ParamTable& table, const void* tied_sum);
  void wait_all_sends();
  Handle recv_activation(void* buf, size_t n, int micro);

  int micro_batches_;
  CountingCommunicator& pipe_;
  Ops& ops_;
  int stage_, stages_;
  std::vector<PipeAction> actions_;
  std::vector<Handle> activation_sends_, gradient_sends_;  // per slot
  std::vector<float> token_losses_;                        // forward_losses' answer
};

}  // namespace zt
