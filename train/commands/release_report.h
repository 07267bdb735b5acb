// explain's section on the emulated DeepSpeed release: what the release does
// with this config (its behaviours that can change this config's calls) and
// what changes from another release, behaviour by behaviour and as the
// steady step planned under each.
#pragma once
#include "train/commands/planned_config.h"
#include "zero/deepspeed_release.h"

namespace zt {

void print_release_report(const PlannedConfig& e, const DeepSpeedRelease& compare_to);

}  // namespace zt
