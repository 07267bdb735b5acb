// Which ds_config keys each DeepSpeed release has, and their defaults where a release changed
// one, for the keys the --deepspeed import reads: one table (deepspeed_release_keys.cpp), read
// from the sdists of every release on PyPI from 0.8.3 to 0.19.8 that was cached
// (deepspeed/runtime/zero/config.py, zero/offload_config.py, runtime/config.py, constants.py;
// runtime/tensor_parallel/config.py from DeepSpeed's git tags);
// where the cache skips releases (0.16.1-0.16.8, 0.18.1-0.18.8, 0.8.x-0.10.x patches) the first
// release with a key was found in DeepSpeed's git tags. For a key the file leaves unset the
// import applies the chosen release's default where a release changed it (gradient_clipping,
// the offload blocks' pin_memory: the functions below) and DeepSpeed 0.14.4's otherwise (no
// release read changed those); warnings_for_release says where the chosen release differs.
//
// What DeepSpeed does with a key it does not have: zero_optimization and its offload blocks are
// pydantic models that forbid extra fields in every release read, so DeepSpeed refuses the
// key; from 0.19.7 (MiCS, some top-level features) and 0.19.8 (LoCo, more) it refuses the
// removed keys by name. Other unknown top-level keys are ignored by DeepSpeed.
#pragma once
#include <string>
#include <vector>

#include "data/json_reader.h"
#include "zero/deepspeed_release.h"

namespace zt {

// The releases the table was read from; outside them warnings_for_release says the keys were
// not checked.
inline constexpr DeepSpeedRelease kOldestReleaseRead{0, 8, 3};
inline constexpr DeepSpeedRelease kNewestReleaseRead{0, 19, 8};
// The release apply_deepspeed_config checks a file against when its caller names none (train
// and plan pass zero.deepspeed_version); ZeroConfig's own defaults are this release's.
inline constexpr DeepSpeedRelease kImportAssumedRelease{0, 14, 4};

struct ReleaseKeyWarning {
  int line = 0;      // where in the ds_config (the enclosing block's line for an absent key)
  std::string key;   // dotted: "zero_optimization.use_multi_rank_bucket_allreduce"; "" for the file
  std::string text;  // one line, without file, line or key
};

// One warning per key of `ds_config` (a parsed ds_config's top-level object) that DeepSpeed
// `release` does not have ("not a key of DeepSpeed V (added in X); DeepSpeed V refuses it", or
// "(removed in X)"), and per key the ds_config leaves to its default (absent, or "auto" inside
// DeepSpeed's pydantic sections; null is refused there) whose default `release` takes from a
// change ("left to
// its default, which in DeepSpeed V is D (D0 before X); zerotrain applies D").
std::vector<ReleaseKeyWarning> warnings_for_release(const JsonValue& ds_config,
                                                    const DeepSpeedRelease& release);

// DeepSpeed `release`'s default, from the same table: gradient_clipping (runtime/constants.py
// GRADIENT_CLIPPING_DEFAULT: 0, 1.0 from 0.19.3) and offload_optimizer / offload_param
// pin_memory (runtime/zero/offload_config.py: false, true from 0.19.5). A release before the
// table gets its first default, one after it the last.
double gradient_clipping_default(const DeepSpeedRelease& release);
bool offload_pin_memory_default(const DeepSpeedRelease& release);

// fp16/bf16 "enabled": "auto" without the HF Trainer: DeepSpeed before 0.17.1 read these blocks
// as plain dicts, so the string "auto" is truthy and the mode is on (both on: DeepSpeed's
// assertion that fp16 and bf16 cannot both be enabled); from 0.17.1 (runtime/precision_config.py,
// pydantic) "auto" is dropped and the mode is off.
bool deepspeed_precision_auto_is_on(const DeepSpeedRelease& release);

}  // namespace zt
