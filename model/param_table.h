// The parameter table: every tensor's name, shape and offset in ONE flat layout,
// grouped by unit so that each unit (embeddings, block i, final layernorm) owns a
// contiguous range. ZeRO shards this layout; the model only reads it.
//
// Unit order: 0 = embeddings (wte, wpe), 1..L = blocks, L+1 = final layernorm.
// The token embedding wte (unit 0) is tied to the LM head, which runs in unit L+1.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "model/gpt_config.h"

namespace zt {

struct ParamInfo {
  std::string name;        // e.g. "h.3.attn.c_attn.weight" (GPT-2/HF naming)
  std::vector<int> shape;  // row-major; Linear weights are [out, in]
  size_t offset = 0;       // element offset in the flat layout
  size_t numel = 0;
  int unit = 0;
  bool decay = false;  // weight decay applies (2-D matmul/embedding weights only)
};

struct UnitRange {
  size_t offset = 0, numel = 0;
  int first_param = 0, n_params = 0;  // index range into ParamTable::params
};

// Indices of a block's tensors inside its unit, in layout order.
enum BlockParam {
  kLn1W,
  kLn1B,
  kQkvW,
  kQkvB,
  kAttProjW,
  kAttProjB,
  kLn2W,
  kLn2B,
  kFcW,
  kFcB,
  kFcProjW,
  kFcProjB,
  kNumBlockParams
};

class ParamTable {
 public:
  explicit ParamTable(const GPTConfig& c);
  const GPTConfig& config() const { return cfg_; }
  const std::vector<ParamInfo>& params() const { return params_; }
  const std::vector<UnitRange>& units() const { return units_; }
  int num_units() const { return static_cast<int>(units_.size()); }
  int final_unit() const { return num_units() - 1; }
  size_t total() const { return total_; }
  // element offset of a tensor relative to its unit's start
  size_t offset_in_unit(int param_index) const {
    const ParamInfo& p = params_[param_index];
    return p.offset - units_[p.unit].offset;
  }
  const ParamInfo* find(const std::string& name) const;
  // parameter index of block b's tensor k
  int block_param(int b, BlockParam k) const { return units_[1 + b].first_param + k; }

 private:
  GPTConfig cfg_;
  std::vector<ParamInfo> params_;
  std::vector<UnitRange> units_;
  size_t total_ = 0;
};

}  // namespace zt
