#include "model/param_table.h"

#include <stdexcept>

namespace zt {
namespace {

void check_split(const GPTConfig& c, const TensorSplit& s) {
  const std::string where = "tensor parallelism over " + std::to_string(s.degree) + " shards: ";
  if (s.degree < 1 || s.index < 0 || s.index >= s.degree)
    throw std::invalid_argument(where + "shard " + std::to_string(s.index) + " does not exist");
  if (c.n_head % s.degree != 0)
    throw std::invalid_argument(where + "model.n_head " + std::to_string(c.n_head) +
                                " is not a multiple of it (each shard holds whole heads)");
  if (c.vocab_size % s.degree != 0)
    throw std::invalid_argument(
        where + "model.vocab_size " + std::to_string(c.vocab_size) +
        " is not a multiple of it (each shard holds equal vocabulary rows)");
}

// Fills in blocks (0: all) and checks the stage's blocks lie in the model.
PipelineSplit checked_stage(const GPTConfig& c, PipelineSplit s) {
  if (s.stages == 1 && s.blocks == 0) s.blocks = c.n_layer;
  const std::string where =
      "pipeline stage " + std::to_string(s.index) + " of " + std::to_string(s.stages) + ": ";
  if (s.stages < 1 || s.index < 0 || s.index >= s.stages)
    throw std::invalid_argument(where + "the stage does not exist");
  if (s.blocks < 1 || s.first_block < 0 || s.first_block + s.blocks > c.n_layer)
    throw std::invalid_argument(where + "blocks " + std::to_string(s.first_block) + ".." +
                                std::to_string(s.first_block + s.blocks - 1) +
                                " are not among the model's " + std::to_string(c.n_layer));
  return s;
}

}  // namespace

ParamTable::ParamTable(const GPTConfig& c, TensorSplit split, PipelineSplit stage)
    : cfg_(c), split_(split), stage_(checked_stage(c, stage)) {
  check_split(c, split);
  const int C = c.n_embd, T = c.seq_len;
  const int V = vocab_rows(), A = attn_width(), F = mlp_width();
  auto add = [&](int unit, const std::string& name, std::vector<int> shape, bool decay,
                 ShardCut cut = ShardCut::Whole) {
    ParamInfo p;
    p.name = name;
    p.shape = std::move(shape);
    p.cut = split.degree > 1 ? cut : ShardCut::Whole;
    p.numel = 1;
    for (int d : p.shape) p.numel *= static_cast<size_t>(d);
    p.offset = total_;
    p.decay = decay;
    total_ += p.numel;
    if (static_cast<int>(units_.size()) <= unit) {
      UnitRange u;
      u.offset = p.offset;
      u.first_param = static_cast<int>(params_.size());
      units_.push_back(u);
    }
    units_[unit].numel += p.numel;
    units_[unit].n_params++;
    params_.push_back(p);
  };
  const int first = stage_.first_block, end = first + stage_.blocks;
  if (has_embeddings() || has_head()) add(0, "wte.weight", {V, C}, true, ShardCut::Rows);
  if (has_embeddings()) add(0, "wpe.weight", {T, C}, true);
  first_block_unit_ = static_cast<int>(units_.size());
  for (int l = first; l < end; l++) {
    const std::string h = "h." + std::to_string(l) + ".";
    const int u = first_block_unit_ + l - first;
    add(u, h + "ln_1.weight", {C}, false);
    add(u, h + "ln_1.bias", {C}, false);
    add(u, h + "attn.c_attn.weight", {3 * A, C}, true, ShardCut::QkvRows);
    add(u, h + "attn.c_attn.bias", {3 * A}, false, ShardCut::QkvRows);
    add(u, h + "attn.c_proj.weight", {C, A}, true, ShardCut::Columns);
    add(u, h + "attn.c_proj.bias", {C}, false);
    add(u, h + "ln_2.weight", {C}, false);
    add(u, h + "ln_2.bias", {C}, false);
    add(u, h + "mlp.c_fc.weight", {F, C}, true, ShardCut::Rows);
    add(u, h + "mlp.c_fc.bias", {F}, false, ShardCut::Rows);
    add(u, h + "mlp.c_proj.weight", {C, F}, true, ShardCut::Columns);
    add(u, h + "mlp.c_proj.bias", {C}, false);
  }
  if (has_head()) {
    add(first_block_unit_ + stage_.blocks, "ln_f.weight", {C}, false);
    add(first_block_unit_ + stage_.blocks, "ln_f.bias", {C}, false);
  }

  auto module = [&](const std::string& name, int parent, std::vector<int> params,
                    bool inputs_need_grad = true) {
    ModuleInfo m;
    m.name = name;
    m.parent = parent;
    m.params = std::move(params);
    m.inputs_need_grad = inputs_need_grad;
    modules_.push_back(m);
    return static_cast<int>(modules_.size()) - 1;
  };
  const int root = module("", -1, {}, false);
  if (has_embeddings()) {
    module("wte", root, {0}, false);
    module("wpe", root, {1}, false);
  }
  for (int l = first; l < end; l++) {
    const std::string h = "h." + std::to_string(l);
    auto p = [&](BlockParam k) { return block_param(l, k); };
    const int block = module(h, root, {});
    module(h + ".ln_1", block, {p(kLn1W), p(kLn1B)});
    const int attn = module(h + ".attn", block, {});
    module(h + ".attn.c_attn", attn, {p(kQkvW), p(kQkvB)});
    module(h + ".attn.c_proj", attn, {p(kAttProjW), p(kAttProjB)});
    module(h + ".ln_2", block, {p(kLn2W), p(kLn2B)});
    const int mlp = module(h + ".mlp", block, {});
    module(h + ".mlp.c_fc", mlp, {p(kFcW), p(kFcB)});
    module(h + ".mlp.c_proj", mlp, {p(kFcProjW), p(kFcProjB)});
  }
  if (has_head()) {
    const int lnf = units_.back().first_param;
    module("ln_f", root, {lnf, lnf + 1});
    module("lm_head", root, {0});
  }
  for (size_t i = 0; i < params_.size(); i++) param_by_name_.emplace(params_[i].name, int(i));
  for (size_t i = 0; i < modules_.size(); i++) module_by_name_.emplace(modules_[i].name, int(i));
}

int ParamTable::module_index(const std::string& name) const {
  const auto it = module_by_name_.find(name);
  return it == module_by_name_.end() ? -1 : it->second;
}

const ParamInfo* ParamTable::find(const std::string& name) const {
  const auto it = param_by_name_.find(name);
  return it == param_by_name_.end() ? nullptr : &params_[static_cast<size_t>(it->second)];
}

}  // namespace zt
