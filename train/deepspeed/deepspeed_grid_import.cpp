// DeepSpeed's "tensor_parallel" and "pipeline" blocks (docs/configuration.md, "Tensor and
// pipeline parallelism", has the source each rule was read from).
//
// tensor_parallel is AutoTP training (deepspeed/runtime/tensor_parallel/config.py,
// TPTrainingConfig, a pydantic model forbidding extra fields, from 0.16.4): autotp_size N > 1
// splits the model over N ranks, 0 (its default) and 1 leave it whole; N is parallel.tensor.
//
// pipeline is a plain dict (runtime/config.py, get_pipeline_config) whose stage count and
// partition DeepSpeed never reads: PipelineModule(num_stages=..., partition_method=...) in the
// training script sets them. An integer "stages" still states the user's degree, so it becomes
// parallel.pipeline with a line saying so. The PipelineEngine reads activation_checkpoint_interval
// (it overrides the module's) and, from 0.12.3, pipe_partitioned / grad_partitioned, which act
// only with model parallelism.
#include <cctype>
#include <tuple>

#include "data/input/input_scalar.h"
#include "train/deepspeed/deepspeed_import_context.h"

namespace zt {
namespace {

std::string lower(const std::string& s) {
  std::string out;
  for (char ch : s) out += char(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

// A JSON number holding an integer >= min. Strings are refused: deepspeed.initialize compares
// tensor_parallel.autotp_size with 0 before pydantic reads it, which fails on a string.
int read_size(DsContext& ctx, const JsonValue& v, int line, const std::string& key, int64_t min,
              const std::string& expected) {
  if (v.kind != JsonValue::Kind::number)
    ctx.fail(line, key, "expected " + expected + ", got " + describe_json(v));
  const int64_t n = ctx.read_int(v, line, key, min);
  if (n > 1 << 20)
    ctx.fail(line, key, "expected " + expected + " of at most 1048576, got " + v.text);
  return int(n);
}

}  // namespace

void import_tensor_parallel(DsContext& ctx, const JsonMember& block) {
  const JsonValue& v = ctx.require_object(block.value[0], block.line, block.key);
  const std::string ignored =
      "not honoured (zerotrain's split is fixed: Megatron-LM's heads, MLP units and vocabulary "
      "rows, docs/parallel_grid.md), ignored";
  for (const JsonMember& m : v.members) {
    const std::string key = block.key + "." + m.key;
    const JsonValue& value = m.value[0];
    if (m.key == "autotp_size") {
      const int n = read_size(ctx, value, m.line, key, 0, "an integer >= 0 (0: AutoTP off)");
      if (n == 0) continue;  // DeepSpeed's default: AutoTP off, parallel.tensor as configured
      ctx.c.parallel.tensor = n;
      ctx.grid.autotp_line = m.line;
      ctx.warn(m.line, key,
               "parallel.tensor " + std::to_string(n) +
                   " (AutoTP splits the HF model's linear layers as Megatron-LM does: attention "
                   "heads, MLP units, vocabulary rows)");
    } else if (m.key == "tp_overlap_comm") {
      if (value.kind != JsonValue::Kind::null && ctx.read_bool(value, m.line, key))
        ctx.warn(m.line, key,
                 "not honoured (zerotrain's tensor all-reduces wait for their inputs), ignored");
    } else if (m.key == "dtype") {
      ctx.warn(m.line, key,
               "not honoured (zerotrain trains in bf16 on the GPU and fp32 on the CPU), ignored");
    } else if (m.key == "tp" || m.key == "tensor_parallel") {
      ctx.warn(m.line, key,
               "not read by DeepSpeed's training engine (autotp_size sets the degree), ignored");
    } else if (m.key == "partition_config" || m.key == "preset_model" ||
               m.key == "injection_policy_tuple" || m.key == "keep_module_on_host" ||
               m.key == "replace_with_kernel_inject" || m.key == "kernel_inject") {
      ctx.warn(m.line, key, ignored);
    } else {
      ctx.fail(m.line, key,
               "not a key of DeepSpeed's tensor_parallel block (expected autotp_size, "
               "tp_overlap_comm, dtype, tp, partition_config, preset_model, ...); DeepSpeed "
               "refuses it");
    }
  }
}

void import_pipeline(DsContext& ctx, const JsonMember& block) {
  const JsonValue& v = ctx.require_object(block.value[0], block.line, block.key);
  Config& c = ctx.c;
  for (const JsonMember& m : v.members) {
    const std::string key = block.key + "." + m.key;
    const JsonValue& value = m.value[0];
    if (m.key == "stages") {
      if (value.is_string("auto")) {
        ctx.warn(m.line, key,
                 "\"auto\": the stage count comes from the training script "
                 "(PipelineModule(num_stages=...)); parallel.pipeline " +
                     std::to_string(c.parallel.pipeline) +
                     " kept, as the zerotrain config sets it");
        continue;
      }
      c.parallel.pipeline = read_size(ctx, value, m.line, key, 1, "an integer >= 1 or \"auto\"");
      ctx.grid.stages_line = m.line;
      ctx.warn(m.line, key,
               "parallel.pipeline " + std::to_string(c.parallel.pipeline) +
                   " (DeepSpeed itself never reads this key: PipelineModule(num_stages=...) in "
                   "the script sets the stage count; zerotrain takes it as that count)");
    } else if (m.key == "partition") {
      if (value.kind != JsonValue::Kind::string)
        ctx.fail(m.line, key,
                 "expected a partition method (\"uniform\", \"parameters\", \"type:REGEX\"), got " +
                     describe_json(value));
      if (lower(value.text) != "uniform")
        ctx.warn(m.line, key,
                 "\"" + value.text +
                     "\" not honoured (DeepSpeed takes the method from PipelineModule's "
                     "partition_method, default \"parameters\", not from here); zerotrain gives "
                     "each stage an equal run of blocks, as DeepSpeed's \"uniform\" does");
    } else if (m.key == "seed_layers") {
      if (value.kind != JsonValue::Kind::null && ctx.read_bool(value, m.line, key))
        ctx.warn(m.line, key,
                 "not honoured (DeepSpeed takes it from PipelineModule(seed_layers=...); "
                 "zerotrain's blocks draw no random numbers in training), ignored");
    } else if (m.key == "activation_checkpoint_interval") {
      const int k = read_size(ctx, value, m.line, key, 0, "an integer >= 0 (0: no checkpoints)");
      if (k == 0) continue;
      const std::string how =
          k == 1 ? "DeepSpeed's PipelineModule checkpoints each layer, so each block's forward "
                   "runs again in its backward from its kept input"
                 : "DeepSpeed checkpoints runs of " + std::to_string(k) +
                       " layers, keeping one input per run; zerotrain keeps one per block, so "
                       "more memory for the same recompute";
      if (ctx.arguments.train.recompute == "none") {
        c.train.recompute = "block";
        ctx.warn(m.line, key, "train.recompute: block (" + how + ")");
      } else {
        ctx.warn(m.line, key,
                 "train.recompute: " + c.train.recompute +
                     " kept, as the zerotrain config sets it (" + how + ")");
      }
    } else if (m.key == "pipe_partitioned" || m.key == "grad_partitioned") {
      if (value.kind != JsonValue::Kind::boolean)
        ctx.fail(m.line, key,
                 "expected true or false (DeepSpeed's PipelineEngine asserts a bool), got " +
                     describe_json(value));
      if (value.text == "true")
        (m.key == "pipe_partitioned" ? ctx.grid.pipe_partitioned_line
                                     : ctx.grid.grad_partitioned_line) = m.line;
    } else {
      ctx.warn(m.line, key, "not a pipeline key zerotrain reads, ignored");
    }
  }
}

int check_grid(DsContext& ctx) {
  const Config& c = ctx.c;
  const int T = c.parallel.tensor, P = c.parallel.pipeline, W = ctx.world;
  if (const int line = ctx.grid.autotp_line) {
    const std::string key = "tensor_parallel.autotp_size", t = std::to_string(T);
    if (W % T != 0)
      ctx.fail(line, key,
               "expected a size dividing the world size " + std::to_string(W) + ", got " + t);
    if (c.model.n_head % T != 0)
      ctx.fail(line, key,
               "expected a divisor of model.n_head " + std::to_string(c.model.n_head) +
                   " (each rank holds whole heads), got " + t);
    if (c.model.vocab_size % T != 0)
      ctx.fail(line, key,
               "expected a divisor of model.vocab_size " + std::to_string(c.model.vocab_size) +
                   " (equal vocabulary rows per rank), got " + t);
  }
  if (const int line = ctx.grid.stages_line) {
    const std::string key = "pipeline.stages", p = std::to_string(P);
    if (W % T != 0 || W / T % P != 0)
      ctx.fail(line, key,
               "expected a size dividing the world size " + std::to_string(W) +
                   " over parallel.tensor " + std::to_string(T) + ", got " + p);
    if (P > c.model.n_layer)
      ctx.fail(line, key,
               "expected at most model.n_layer " + std::to_string(c.model.n_layer) +
                   " (each stage holds at least one block), got " + p);
  }
  for (const auto& [line, key, what] :
       {std::tuple{ctx.grid.pipe_partitioned_line, "pipeline.pipe_partitioned", "activations"},
        std::tuple{ctx.grid.grad_partitioned_line, "pipeline.grad_partitioned", "gradients"}}) {
    if (line == 0) continue;
    ctx.warn(line, key,
             T > 1 && P > 1
                 ? std::string("not honoured (DeepSpeed splits the stage boundary's ") + what +
                       " across the " + std::to_string(T) +
                       " tensor ranks; zerotrain sends them whole), ignored"
                 : std::string("moot (DeepSpeed applies it only with tensor parallelism under a "
                               "pipeline; zerotrain sends whole ") +
                       what + "), ignored");
  }
  // DeepSpeed's batch arithmetic counts the data-parallel ranks of its mpu (Megatron's, or the
  // PipelineModule's topology); AutoTP alone runs without one, so DeepSpeedConfig counts every
  // rank (runtime/config.py, DeepSpeedConfig.__init__).
  if (W % (T * P) != 0) return W;  // validate_for_world names parallel.tensor / pipeline
  return ctx.grid.autotp_line && P == 1 ? W : W / (T * P);
}

}  // namespace zt
