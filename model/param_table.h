// The parameter table: every tensor's name, shape and offset in ONE flat layout
// (checkpoints and model files use it), grouped by unit so that each unit
// (embeddings, block i, final layernorm) owns a contiguous range; and the
// module tree the model runs as, named and nested as the PyTorch GPT-2 that
// DeepSpeed users train (HF naming), since ZeRO stage 3 gathers per module.
//
// Tensor parallelism (Megatron-LM's split) makes a table of one shard: the
// QKV and MLP-up projections keep their shard's output rows (heads; the 4C
// hidden units), the attention and MLP-down projections their input columns,
// the token embedding its vocabulary rows; LayerNorms, wpe and the biases of
// the column-cut projections stay whole. Shapes and offsets are the shard's.
//
// Unit order: 0 = embeddings (wte, wpe), 1..L = blocks, L+1 = final layernorm.
// The token embedding wte (unit 0) is tied to the LM head, which runs in unit L+1.
//
// Pipeline parallelism makes a table of one stage: its contiguous blocks
// (named as in the whole model, h.first..), the embeddings on the first stage,
// ln_f and the LM head on the last, which holds its own copy of wte for the
// head (Megatron's tied word embeddings: the copies' gradients are summed
// between the two stages). Units are the stage's: the embedding unit (wte,
// wpe; on a last stage that is not the first, wte alone), its blocks, ln_f.
//
// Modules, in the order their forwards start: the root (""), wte, wpe, then per
// block h.i, h.i.ln_1, h.i.attn, h.i.attn.c_attn, h.i.attn.c_proj, h.i.ln_2,
// h.i.mlp, h.i.mlp.c_fc, h.i.mlp.c_proj; then ln_f and lm_head (whose one
// parameter is wte). Containers (root, h.i, attn, mlp) own no parameters.
#pragma once
#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/gpt_config.h"

namespace zt {

// How a tensor is cut into tensor-parallel shards: whole on every shard; by
// rows (dimension 0); by rows within each of q, k and v (the QKV projection,
// so each shard holds whole heads of all three); by columns (dimension 1).
enum class ShardCut { Whole, Rows, QkvRows, Columns };

// Which shard of the model a table holds: shard `index` of `degree`.
struct TensorSplit {
  int degree = 1;
  int index = 0;
  // Sequence parallelism (Korthikanti et al. 2022): the residual stream, the
  // LayerNorms and the residual adds keep 1/degree of a pass's tokens.
  bool sequence = false;
};

// Which pipeline stage a table holds: stage `index` of `stages`, with blocks
// [first_block, first_block + blocks) (zero/grid/pipeline_schedule.h cuts
// them; blocks 0 with one stage: all of them).
struct PipelineSplit {
  int stages = 1;
  int index = 0;
  int first_block = 0;
  int blocks = 0;
};

struct ParamInfo {
  std::string name;        // e.g. "h.3.attn.c_attn.weight" (GPT-2/HF naming)
  std::vector<int> shape;  // row-major; Linear weights are [out, in]; the shard's
  ShardCut cut = ShardCut::Whole;
  size_t offset = 0;  // element offset in the flat layout
  size_t numel = 0;
  bool decay = false;  // weight decay applies (2-D matmul/embedding weights only)
};

struct ModuleInfo {
  std::string name;         // "h.3.attn.c_attn"; "" for the root
  std::vector<int> params;  // its own parameters (not its children's), in registration order
  int parent = -1;          // -1 for the root
  // The whole model: its fetch opens a pass and its release closes one.
  bool is_root() const { return parent < 0; }
  // False where the module's inputs carry no gradient (the root and the
  // embeddings read token ids): PyTorch then runs no hook after its backward.
  bool inputs_need_grad = true;
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
  // Throws std::invalid_argument (one line) when the split does not divide
  // the heads and the vocabulary, or the stage's blocks are not the model's.
  explicit ParamTable(const GPTConfig& c, TensorSplit split = {}, PipelineSplit stage = {});
  const GPTConfig& config() const { return cfg_; }
  const TensorSplit& split() const { return split_; }
  const PipelineSplit& stage() const { return stage_; }
  // The stage's blocks [first_block(), first_block() + blocks()) and ends.
  int first_block() const { return stage_.first_block; }
  int blocks() const { return stage_.blocks; }
  bool has_embeddings() const { return stage_.index == 0; }
  bool has_head() const { return stage_.index == stage_.stages - 1; }
  // The shard's widths: attention heads and channels, MLP hidden units, and
  // the vocabulary rows [vocab_begin, vocab_begin + vocab_rows).
  int heads() const { return cfg_.n_head / split_.degree; }
  int attn_width() const { return cfg_.n_embd / split_.degree; }
  int mlp_width() const { return 4 * cfg_.n_embd / split_.degree; }
  int vocab_rows() const { return cfg_.vocab_size / split_.degree; }
  int vocab_begin() const { return split_.index * vocab_rows(); }
  bool sequence_split() const { return split_.sequence && split_.degree > 1; }
  // Rows of the residual stream the shard keeps in a pass over `tokens`
  // tokens: all of them, or under sequence parallelism 1/degree of them, the
  // pass padded to a multiple of the degree (a sampling pass's may not be).
  size_t residual_rows(size_t tokens) const {
    if (!sequence_split()) return tokens;
    const size_t d = static_cast<size_t>(split_.degree);
    return (tokens + d - 1) / d;
  }
  const std::vector<ParamInfo>& params() const { return params_; }
  const std::vector<UnitRange>& units() const { return units_; }
  const std::vector<ModuleInfo>& modules() const { return modules_; }
  int module_index(const std::string& name) const;  // -1 if none
  int num_units() const { return static_cast<int>(units_.size()); }
  int final_unit() const { return num_units() - 1; }
  size_t total() const { return total_; }
  const ParamInfo* find(const std::string& name) const;
  // parameter index of block b's tensor k (b: the whole model's block index,
  // one of the stage's)
  int block_param(int b, BlockParam k) const {
    return units_[first_block_unit_ + b - stage_.first_block].first_param + k;
  }

 private:
  GPTConfig cfg_;
  TensorSplit split_;
  PipelineSplit stage_;
  int first_block_unit_ = 1;
  std::vector<ParamInfo> params_;
  std::vector<UnitRange> units_;
  std::vector<ModuleInfo> modules_;
  // Name -> index: lookups by name happen per module per pass, so a scan
  // would make a plan quadratic in the layers.
  std::unordered_map<std::string, int> param_by_name_, module_by_name_;
  size_t total_ = 0;
};

}  // namespace zt
