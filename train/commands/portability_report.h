// `zerotrain report --portability RUNS_DIR... [--out DIR] [--no-plots]`: the
// performance portability of each configuration (run NAME) across the systems
// whose run sets the RUNS_DIRs hold (train/report/portability.h).
#pragma once
#include <string>
#include <vector>

namespace zt {

int run_portability_report(const std::vector<std::string>& args);

}  // namespace zt
