// Sharded checkpoints. Each rank writes the optimizer state it owns (fp32
// master, m, v) as a list of flat-layout pieces, so a checkpoint can be loaded
// back at any world size and any stage (each rank picks the pieces it owns now)
// and gathered into one model file by `export`.
//
// RUN/checkpoints/step_00000100/ holds rank_00000.bin ... , meta.json,
// config.yaml and, written last, COMPLETE. Everything is written into a .tmp
// directory first (files fsynced), renamed, then marked complete, so a killed
// job never leaves a checkpoint that looks whole.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "train/config.h"
#include "zero/engine.h"

namespace zt {

struct CheckpointMeta {
  int64_t step = 0;  // optimizer steps completed
  int world = 0;
  int stage = 0;
};

// Collective over all ranks. Keeps the newest `keep` complete checkpoints.
void save_checkpoint(const std::string& run_dir, int64_t step, ZeroEngine& engine,
                     const Config& cfg, const std::string& config_yaml, int rank, int world);
// Newest complete checkpoint directory under RUN/checkpoints, or "" if none.
std::string latest_checkpoint(const std::string& run_dir);
CheckpointMeta read_checkpoint_meta(const std::string& dir);
// Fills this rank's optimizer state from the checkpoint (any saved world size).
void load_checkpoint(const std::string& dir, ZeroEngine& engine);
// The full fp32 master weights of a checkpoint (host), for export and sampling.
std::vector<float> read_checkpoint_weights(const std::string& dir, uint64_t total_params);

}  // namespace zt
