// Sharded checkpoints. Each rank writes the optimizer state it owns (fp32
// master, m, v) as a list of pieces of the whole model's flat layout, so a
// checkpoint can be loaded back at any world size, any stage and any grid
// (each rank picks the pieces it owns now) and gathered into one model file
// by `export`. A rank of a tensor-parallel or pipeline grid holds a part of
// the model in its own layout; its pieces are mapped into the whole model's
// (model/tensor_split.h: a column-cut tensor is one piece per row), and an
// element several ranks hold (a LayerNorm on every tensor rank, the last
// stage's copy of wte) is written by the lowest of them.
//
// RUN/checkpoints/step_00000100/ holds rank_00000.bin ... , config.yaml,
// meta.json and, written last, COMPLETE (train/io/checkpoint_format.h has the
// bytes). Everything is written into step_00000100.tmp/ first (files fsynced),
// renamed, then marked complete, so a killed job never leaves a checkpoint that
// looks whole. Every load verifies the size and CRC-32 of every file it uses
// before any of it reaches the model.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/tensor_split.h"
#include "train/io/checkpoint_format.h"
#include "zero/stages/engine.h"

namespace zt {

// What a run's checkpoints record besides the optimizer state.
struct CheckpointContext {
  std::string run_dir;
  GPTConfig model;
  int keep = 2;  // complete checkpoints kept, the newest
  std::string config_yaml, config_json;
  TokenizerIdentity tokenizer;
  std::string model_dtype, device;
  // This rank's part in the whole model's layout (whole_runs); empty: the
  // rank's layout is the whole model's.
  std::vector<WholeRun> part;
};

// The pieces in the whole model's layout: each piece cut where `part` stops
// being contiguous in the whole model (shard and layout offsets follow).
std::vector<OptimPiece> whole_model_pieces(const std::vector<OptimPiece>& pieces,
                                           const std::vector<WholeRun>& part);

// Collective over all ranks. A failed write on any rank removes the temporary
// directory and throws JobError (the same line on every rank).
void save_checkpoint(const CheckpointContext& c, int64_t step, ZeroEngine& engine, int rank,
                     int world);

// Checkpoint directories under RUN/checkpoints with a COMPLETE marker, by step.
std::vector<std::string> complete_checkpoints(const std::string& run_dir);

// meta.json checked against COMPLETE, parsed and checked field by field, and
// config.yaml checked against meta.json. Throws DataError naming the file.
CheckpointMeta read_checkpoint_meta(const std::string& dir);

// Fails (ConfigError, one line naming the key and both values) when `model` (or
// the tokenizer, when given) differs from what the checkpoint holds; `other`
// names where the other values come from ("the config").
void check_same_model(const std::string& dir, const CheckpointMeta& meta, const GPTConfig& model,
                      const TokenizerIdentity* tokenizer, const std::string& other);

// The rank files of a checkpoint: headers read and checked against meta.json,
// the pieces checked to cover every parameter exactly once; the data of rank r
// is verified (size, CRC-32 of the data and of the whole file) when verify(r)
// says so. Throws DataError naming the file.
class CheckpointReader {
 public:
  CheckpointReader(const std::string& dir, const CheckpointMeta& meta,
                   const std::function<bool(int)>& verify);
  ~CheckpointReader();
  // Elements [b, e) of state array k (0 master, 1 m, 2 v) into out.
  void read(uint64_t b, uint64_t e, int k, float* out) const;

 private:
  struct Piece;
  std::string dir_;
  std::vector<Piece> pieces_;  // by flat offset
  std::vector<std::unique_ptr<InputFile>> files_;
};

// Collective --resume: the newest complete checkpoint that verifies is loaded
// into the engine. Each one that does not is passed to on_reject (one line
// naming the file and why) and the next older one is tried; a model that
// differs from the config's fails at once (check_same_model). Returns "" when
// there is no complete checkpoint; throws DataError when none verifies.
struct ResumePoint {
  std::string dir;
  CheckpointMeta meta;
  int rejected = 0;
};
// `part` as in CheckpointContext.
ResumePoint resume_from_checkpoint(const std::string& run_dir, const GPTConfig& model,
                                   const std::vector<WholeRun>& part,
                                   const TokenizerIdentity& tokenizer, ZeroEngine& engine,
                                   const std::function<void(const std::string&)>& on_reject);

// The full fp32 master weights of a checkpoint, every file verified (export,
// eval, sample).
std::vector<float> read_checkpoint_weights(const std::string& dir, const CheckpointMeta& meta);

}  // namespace zt
