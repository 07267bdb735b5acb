// parallel.tensor's and parallel.pipeline's cross-key rules: what the split needs of the model, and
// what does not run with a tensor-parallel grid yet (each refused in one line
// naming the key, rather than run wrong).
#pragma once
#include <string>
#include <vector>

#include "train/config/config.h"

namespace zt {

// The first problem: {the keys to blame, what was expected}; keys empty when none.
struct ParallelProblem {
  std::vector<const char*> keys;
  std::string expected;
};
ParallelProblem tensor_parallel_problem(const Config& c);
// parallel.pipeline's: the blocks to cut, DeepSpeed's pipeline rule for the
// ZeRO stage (zero/schedule/deepspeed_behaviours.h), what does not run yet.
ParallelProblem pipeline_parallel_problem(const Config& c);

}  // namespace zt
