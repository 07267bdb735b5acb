#include "train/config/parallel_checks.h"

#include "zero/schedule/deepspeed_behaviours.h"

namespace zt {

ParallelProblem tensor_parallel_problem(const Config& c) {
  const int T = c.parallel.tensor;
  if (c.parallel.sequence_parallel && T == 1)
    return {{"parallel.sequence_parallel", "parallel.tensor"},
            "expected parallel.tensor above 1 with parallel.sequence_parallel: true (it splits "
            "the sequence over the tensor group), got 1"};
  if (T == 1) return {};
  if (c.parallel.sequence_parallel && c.model.seq_len % T != 0)
    return {{"parallel.sequence_parallel", "model.seq_len", "parallel.tensor"},
            "expected model.seq_len (" + std::to_string(c.model.seq_len) +
                ") to be a multiple of parallel.tensor with parallel.sequence_parallel (each "
                "rank keeps an equal part of the sequence), got " +
                std::to_string(T)};
  if (c.model.n_head % T != 0)
    return {{"parallel.tensor", "model.n_head"},
            "expected model.n_head (" + std::to_string(c.model.n_head) +
                ") to be a multiple of parallel.tensor (each rank holds whole heads), got " +
                std::to_string(T)};
  if (c.model.vocab_size % T != 0) {
    // The embedding may have more rows than the tokenizer has tokens, as
    // llm.c's 50304 for GPT-2's 50257 and Megatron-LM's padding to 128 x T.
    const int padded = (c.model.vocab_size + T - 1) / T * T;
    return {{"parallel.tensor", "model.vocab_size"},
            "expected model.vocab_size (" + std::to_string(c.model.vocab_size) +
                ") to be a multiple of parallel.tensor (equal vocabulary rows per rank; padded "
                "rows are allowed, " +
                std::to_string(padded) + " is the next multiple), got " + std::to_string(T)};
  }
  return {};
}

ParallelProblem pipeline_parallel_problem(const Config& c) {
  const int P = c.parallel.pipeline;
  if (P == 1) return {};
  const std::string with = " with parallel.pipeline " + std::to_string(P);
  if (c.model.n_layer < P)
    return {{"parallel.pipeline", "model.n_layer"},
            "expected parallel.pipeline <= model.n_layer " + std::to_string(c.model.n_layer) +
                " (each stage holds at least one block), got " + std::to_string(P)};
  const ZeroConfig& z = c.zero;
  const DeepSpeedRelease& release = z.deepspeed_version;
  if (!pipeline_engine_accepts_zero_stage(release, z.stage) && !c.parallel.pipeline_zero_anyway)
    return {{"zero.stage", "parallel.pipeline"},
            "expected zero.stage 0 or 1" + with + ": DeepSpeed " + release.str() +
                "'s PipelineEngine.__init__ asserts that the ZeRO stage is below 2 "
                "(deepspeed/runtime/pipe/engine.py, since 0.3.16; "
                "parallel.pipeline_zero_anyway: true runs it anyway), got " +
                std::to_string(z.stage)};
  return {};
}

}  // namespace zt
