// The whole run configuration: YAML sections model, data, train, zero, system.
// Defaults here are the documented defaults (docs/config.md, generated from config_schema).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/gpt_config.h"
#include "model/recompute.h"
#include "zero/zero_config.h"

namespace zt {

struct DataConfig {
  std::string train = "build/data/kjv/train_*.bin";  // file or glob of token shards
  std::string val = "build/data/kjv/val_*.bin";
  std::string tokenizer = "byte";  // "byte", "gpt2", a .tiktoken file or a sentencepiece .model
  // Used, with a notice, when train / val match no file (GPT-2 presets: the KJV's GPT-2 shards).
  std::string train_fallback;
  std::string val_fallback;
};

struct TrainConfig {
  int steps = 200;
  int micro_batch = 4;                 // B: sequences per micro-step per rank
  int64_t global_batch_tokens = 6144;  // tokens per optimizer step over all ranks
  double lr = 1e-3;
  double min_lr = 1e-4;
  int warmup_steps = 20;
  double weight_decay = 0.1;
  double grad_clip = 1.0;  // 0 disables clipping
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  int eval_every = 25;
  int eval_batches = 8;
  int sample_every = 100;
  int sample_tokens = 200;
  double temperature = 0.8;
  int top_k = 40;
  int checkpoint_every = 0;
  int keep_checkpoints = 2;
  uint64_t seed = 1337;
  int log_every = 1;
  int hellaswag_every = 0;     // HellaSwag accuracy every N steps (and at the last); 0: never
  std::string hellaswag_file;  // hellaswag_val.jsonl
  // Optimizer parameter groups as ZeRO partitions them: "two" (weights with
  // decay, biases and norms without, as the HF Trainer builds them) or "one".
  std::string param_groups = "two";
  // LR schedule shape: "cosine" (llm.c: warm-up from lr/warmup_steps, cosine to min_lr),
  // "constant", or DeepSpeed's "warmup_lr", "warmup_decay_lr", "warmup_cosine_lr"
  // (train/loop/lr_schedule.h has the formulas).
  std::string lr_schedule = "cosine";
  std::string warmup_type = "linear";  // DeepSpeed shapes: "linear" or "log" warm-up
  double warmup_start_lr = 0;          // warmup_cosine_lr: the warm-up's first value
  // How --deepspeed resolves "auto": "deepspeed" (as DeepSpeed itself) or "hf" (as the HF Trainer).
  std::string deepspeed_auto = "deepspeed";
  // Activation recompute in the backward: "none", "attn", "mlp" or "block" (model/recompute.h).
  std::string recompute = "none";
  // Recovery from in-memory snapshots (docs/recovery.md): "memory" snapshots
  // the training state into the node's shared memory every snapshot_every
  // steps (1 when 0), for `train --recover`; "none" takes none unless
  // snapshot_every > 0.
  std::string recovery = "none";
  int snapshot_every = 0;
};

struct SystemConfig {
  std::string device = "cpu";         // auto | cpu | cuda
  std::string communicator = "auto";  // auto | mpi | nccl (auto: nccl on GPUs when W > 1)
  bool deterministic = true;
  bool comm_trace = false;
  std::string fault_inject;  // "RANK:STEP:exit|throw", empty = off (tests only)
  // Failure detection (docs/recovery.md): a heartbeat to every peer this often;
  // a peer silent for failure_timeout_s is lost (0: no peer watch).
  int heartbeat_ms = 100;
  double failure_timeout_s = 60;
  // Compute emulation (docs/compute_emulation.md): "emulate" replaces the
  // model's forward, backward and optimizer arithmetic by timed waits; the
  // schedule, buckets and collectives stay real.
  std::string compute = "real";                 // real | emulate
  std::string emulate_from;                     // a summary.json whose timing gives the durations
  double emulate_micro_step_ms = 0;             // or given: forward + backward of one micro-step
  double emulate_optimizer_ms = 0;              // and the whole model's optimizer step
  double emulate_forward_fraction = 1.0 / 3.0;  // the forward's share of a micro-step
  double emulate_time_scale = 1;                // every duration multiplied by it
};

// The parallel grid (docs/parallel_grid.md): W = data x tensor x pipeline ranks.
struct ParallelConfig {
  int tensor = 1;                          // Megatron-LM tensor parallelism over this many ranks
  int pipeline = 1;                        // pipeline stages (contiguous blocks; docs/pipeline.md)
  std::string pipeline_schedule = "1f1b";  // or "gpipe"
  // "tensor-inner": a tensor group is `tensor` consecutive ranks (inside a
  // node when its ranks are a multiple); "data-inner": a data group is.
  std::string rank_order = "tensor-inner";
  // Run ZeRO stages 2 and 3 under a pipeline although DeepSpeed's pipeline
  // engine refuses them, so that their interference can be measured.
  bool pipeline_zero_anyway = false;
  // Megatron-LM's sequence parallelism (Korthikanti et al. 2022) over the
  // tensor group: the residual stream and LayerNorms keep 1/tensor of the tokens.
  bool sequence_parallel = false;
};

struct Config {
  GPTConfig model;
  DataConfig data;
  TrainConfig train;
  ZeroConfig zero;
  SystemConfig system;
  ParallelConfig parallel;
  std::string source;  // file the config came from (for messages)
};

// Config files are read whole, and only up to this size.
constexpr uint64_t kConfigMaxBytes = 1 << 20;

// Loads `path`, applies `overrides` ("section.key=value", in order), validates
// everything. On any problem throws ConfigError with one line:
// "FILE:LINE: key 'train.stepz': unknown key (did you mean 'steps'?)".
Config load_config(const std::string& path, const std::vector<std::string>& overrides);
// Range and cross-key checks of a Config built or changed in code (e.g. by a
// DeepSpeed import); load_config already applies them.
void validate_config(const Config& c);
// Checks cross-key consistency for a world size (global batch divisibility).
void validate_for_world(const Config& c, int world_size);
// The effective config as YAML (all keys, full precision), for printing and the run dir.
std::string config_to_yaml(const Config& c);
// The same as a JSON object, scalars typed (summary.json, checkpoint metadata).
std::string config_to_json(const Config& c);
// The data-parallel ranks of a job of world_size ranks: world_size over
// parallel.tensor x parallel.pipeline (ConfigError when that does not divide it).
int data_parallel_size(const Config& c, int world_size);
// Micro-steps per optimizer step for a world size.
int grad_accum_steps(const Config& c, int world_size);
// Optimizer steps between in-memory snapshots: train.snapshot_every, or 1
// with train.recovery: memory when it is 0; 0: no snapshots.
int snapshot_interval(const TrainConfig& t);
// train.recompute as the model's level (validated: a bad name throws ConfigError).
Recompute recompute_level(const Config& c);

struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace zt
