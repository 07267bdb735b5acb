// Setting up a `zerotrain train` run, before its first step: the checked
// configuration, the data, the backend with its communicator, ZeRO engine and
// models, the header the run prints, and what its checkpoints record.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/loader.h"
#include "data/tokenizer.h"
#include "model/gpt.h"
#include "train/config/config.h"
#include "train/io/checkpoint.h"
#include "train/loop/emulated_compute.h"
#include "train/loop/fault_inject.h"
#include "train/loop/hellaswag.h"
#include "train/loop/pipeline_step.h"
#include "train/loop/recovery.h"
#include "train/loop/runtime.h"
#include "train/loop/trainer.h"
#include "zero/grid/grid.h"
#include "zero/grid/tensor_parallel_hooks.h"
#include "zero/stages/engine.h"

namespace zt {

// 1. The configuration, complete and checked before anything is printed or done.
struct RunSettings {
  Config cfg;
  std::vector<std::string> ds_warnings, data_notes;
  FaultInjection fault;
  std::string cluster, config_yaml;
  int accum = 1, B = 1, T = 1;
  std::optional<EmulatedDurations> emulated;  // system.compute: emulate
};

RunSettings load_run_settings(const TrainArgs& a, int world);

// 2. Data: shards are validated (header, size, every token) before anything else.
struct RunData {
  std::unique_ptr<DataLoader> train, val;
  std::unique_ptr<Tokenizer> tokenizer;
  HellaswagSet hellaswag;
};

// rank and world: the rank's data-parallel index and the data-parallel size
// (every rank of a tensor group reads the same micro-batches).
RunData load_run_data(const RunSettings& r, int rank, int world);

// 3. Backend, communicator, ZeRO and the models (members in construction order).
struct RunModels {
  RunModels(const RunSettings& r, const RunData& d);
  Runtime rt;
  Grid grid;
  // This rank's tensor shard of its pipeline stage (the whole model without either).
  ParamTable table;
  // With parallel.tensor > 1 or parallel.pipeline > 1: the tensor group's,
  // the data-parallel group's and the pipeline's communicators (counted into
  // rt.comm's stats by dimension), the hooks that apply the tensor split
  // between the model and ZeRO, and the stage's schedule.
  std::unique_ptr<CountingCommunicator> tensor_comm, data_comm, pipeline_comm;
  std::unique_ptr<ZeroEngine> engine;
  std::unique_ptr<TensorParallelHooks> tensor_hooks;
  // What ZeRO runs over, and what the model calls.
  Communicator& zero_comm() { return data_comm ? *data_comm : *rt.comm; }
  ModuleHooks& hooks() { return tensor_hooks ? static_cast<ModuleHooks&>(*tensor_hooks) : *engine; }
  std::unique_ptr<PipelineStage> pipeline;
  std::unique_ptr<StageCompute> stage;  // with a pipeline: the model or its emulation
  Recompute recompute = Recompute::None;
  // The training model's activations, measured and by the formula
  // (model/activation_memory.h; a stage's, with its slots).
  uint64_t model_activations = 0, activations_formula = 0;
  std::unique_ptr<GPT> model, sampler, hellaswag;
  std::unique_ptr<EmulatedGPT> emulated;   // instead of model, with system.compute: emulate
  std::unique_ptr<Snapshotter> snapshots;  // train.recovery: memory (train/loop/recovery.h)
};

void print_run_header(const TrainArgs& a, const RunSettings& r, const RunModels& m, int world);
CheckpointContext checkpoint_context(const TrainArgs& a, const RunSettings& r, const RunModels& m);

}  // namespace zt
