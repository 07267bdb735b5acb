// Shared by the DeepSpeed importer's files (train/deepspeed/deepspeed_import.cpp, the batch, ZeRO
// and precision keys; train/deepspeed/deepspeed_optimizer.cpp, the optimizer and scheduler): where
// a key is, how to warn and fail about it, and DeepSpeed's (pydantic's lax) reading of scalars.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/json_reader.h"
#include "train/config/config.h"
#include "train/deepspeed/hf_auto_values.h"
#include "zero/deepspeed_release.h"

namespace zt {

class DsContext {
 public:
  DsContext(const std::string& path, int world, Config& c, std::vector<std::string>& warnings,
            DeepSpeedRelease release)
      : path(path), world(world), c(c), arguments(c), warnings(warnings), release(release) {}

  // "FILE:LINE: key 'zero_optimization.stage': "
  std::string at(int line, const std::string& key) const;
  [[noreturn]] void fail(int line, const std::string& key, const std::string& what) const;
  void warn(int line, const std::string& key, const std::string& what) const;
  // Resolving "auto" as the HF Trainer does (train.deepspeed_auto: hf).
  bool hf() const { return c.train.deepspeed_auto == "hf"; }
  // "auto" at a key DeepSpeed reads as a plain value (batch sizes, gradient_clipping, optimizer
  // and scheduler parameters), where DeepSpeed alone fails on it: the HF Trainer's value with
  // train.deepspeed_auto: hf; refused otherwise, and where the Trainer has no rule.
  HfAutoValue trainer_auto(int line, const std::string& key);
  // "auto" in one of DeepSpeed's pydantic sections (zero_optimization, and fp16/bf16 from
  // 0.17.1), at ZeRO `stage`: the Trainer's value with train.deepspeed_auto: hf where it has a
  // rule; nullopt where DeepSpeed drops it and takes its default.
  std::optional<HfAutoValue> pydantic_auto(int line, const std::string& key, int stage);
  // The line naming the resolver in force and what each "auto" became; empty when none.
  std::string auto_summary() const;

  // pydantic's lax bool: true/false, 0/1, and the strings yes/no, on/off, t/f, y/n, 1/0.
  bool read_bool(const JsonValue& v, int line, const std::string& key) const;
  // An integer >= min: a number without a fraction, or a string holding one ("5e8" too).
  int64_t read_int(const JsonValue& v, int line, const std::string& key, int64_t min) const;
  // A finite number >= min (or > min when `exclusive`).
  double read_number(const JsonValue& v, int line, const std::string& key, double min,
                     bool exclusive = false) const;
  const JsonValue& require_object(const JsonValue& v, int line, const std::string& key) const;

  const std::string& path;
  const int world;
  Config& c;
  // The config as loaded, before the import: what stands in for the HF Trainer's arguments.
  const Config arguments;
  std::vector<std::string>& warnings;
  const DeepSpeedRelease release;  // whose keys and "auto" handling the ds_config is read with
  std::vector<std::string> autos_filled, autos_defaulted, autos_on;  // for auto_summary
  // What the "tensor_parallel" and "pipeline" blocks set, checked together once both are read
  // (check_grid): the grid's keys depend on each other and on the world.
  struct Grid {
    int autotp_line = 0;  // tensor_parallel.autotp_size >= 1 was read here
    int stages_line = 0;  // pipeline.stages (an integer) was read here
    int pipe_partitioned_line = 0, grad_partitioned_line = 0;  // set true here
  } grid;
};

// train/deepspeed/deepspeed_optimizer.cpp: the "optimizer" and "scheduler" blocks (either may be
// null).
void import_optimizer(DsContext& ctx, const JsonMember* optimizer);
void import_scheduler(DsContext& ctx, const JsonMember* scheduler, bool has_optimizer);
// After both: a train.min_lr (the YAML's, kept with its schedule) above the ds_config's lr is
// lowered to that lr, with a note (see deepspeed_import.h).
void fit_min_lr(DsContext& ctx, const JsonMember* optimizer);
// train/deepspeed/deepspeed_zero_import.cpp: the "zero_optimization" block; sets *offload_to_cpu
// when it offloads the optimizer to the CPU or NVMe (which the precision check reads).
void import_zero_optimization(DsContext& ctx, const JsonMember& block, bool* offload_to_cpu);
// train/deepspeed/deepspeed_activation_checkpointing.cpp: the "activation_checkpointing" block.
void import_activation_checkpointing(DsContext& ctx, const JsonMember& block);
// train/deepspeed/deepspeed_grid_import.cpp: the "tensor_parallel" and "pipeline" blocks, then
// check_grid after every block (the sizes against the world and the model, and the flags that
// depend on both); check_grid returns the ranks DeepSpeed's batch arithmetic counts.
void import_tensor_parallel(DsContext& ctx, const JsonMember& block);
void import_pipeline(DsContext& ctx, const JsonMember& block);
int check_grid(DsContext& ctx);

}  // namespace zt
