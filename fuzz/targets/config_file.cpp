// A YAML config file through load_config, then what a run does with it next:
// the world-size check, the accumulation steps, the recompute level and the
// effective config as YAML and JSON (written to the run directory).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/support/parse_outcome.h"
#include "fuzz/support/scratch_file.h"
#include "train/config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = zt::fuzz::write_scratch("config.yaml", data, size);
  zt::fuzz::parse_or_reject([&] {
    const zt::Config c = zt::load_config(path, {});
    (void)zt::config_to_yaml(c);
    (void)zt::config_to_json(c);
    (void)zt::recompute_level(c);
    zt::validate_for_world(c, 2);
    (void)zt::grad_accum_steps(c, 2);
  });
  return 0;
}
