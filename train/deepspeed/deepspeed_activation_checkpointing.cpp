// DeepSpeed's "activation_checkpointing" block. In DeepSpeed it configures
// deepspeed.checkpointing, which checkpoints what the model code wraps in
// checkpoint(); Megatron-DeepSpeed (--checkpoint-activations) and the HF models
// wrap each transformer layer, so the block means recompute: block here, unless
// train.recompute already names a level. Its keys tune what zerotrain has no
// counterpart for (model-parallel partitioning, offload to the CPU), or does
// anyway (contiguous buffers): each one set gets a line saying which.
#include <map>

#include "train/deepspeed/deepspeed_import_context.h"

namespace zt {

void import_activation_checkpointing(DsContext& ctx, const JsonMember& block) {
  const JsonValue& v = ctx.require_object(block.value[0], block.line, block.key);
  TrainConfig& t = ctx.c.train;
  if (t.recompute == "none") {
    t.recompute = "block";
    ctx.warn(block.line, block.key,
             "train.recompute: block (each block's forward runs again in its backward from its "
             "kept input, as Megatron-DeepSpeed and HF checkpoint every layer)");
  } else {
    ctx.warn(block.line, block.key,
             "train.recompute: " + t.recompute + " kept, as the zerotrain config sets it");
  }
  // DeepSpeed's flags, and why each is moot here when set.
  static const std::map<std::string, std::string> flags = {
      {"partition_activations",
       "it splits the checkpoints across the tensor-parallel ranks; zerotrain keeps each "
       "rank's whole"},
      {"cpu_checkpointing", "zerotrain keeps the block inputs in device memory"},
      {"contiguous_memory_optimization",
       "zerotrain's block inputs already live in buffers allocated once"},
      {"synchronize_checkpoint_boundary", "zerotrain's ops run in one stream, in order"},
      {"profile", "zerotrain does not time the checkpoints"},
  };
  for (const JsonMember& m : v.members) {
    const std::string key = block.key + "." + m.key;
    const JsonValue& value = m.value[0];
    auto flag = flags.find(m.key);
    if (flag != flags.end()) {
      if (value.kind != JsonValue::Kind::null && ctx.read_bool(value, m.line, key))
        ctx.warn(m.line, key, "not honoured (" + flag->second + "), ignored");
    } else if (m.key == "number_checkpoints") {
      if (value.kind != JsonValue::Kind::null)
        ctx.warn(m.line, key,
                 "not honoured (zerotrain keeps one input per block, " +
                     std::to_string(ctx.c.model.n_layer) + " here), ignored");
    } else {
      ctx.warn(m.line, key, "not a DeepSpeed activation_checkpointing key, ignored");
    }
  }
}

}  // namespace zt
