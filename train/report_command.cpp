#include <stdexcept>

#include "train/commands.h"

namespace zt {

int run_report_command(const std::vector<std::string>&) {
  throw std::runtime_error("report is not available yet");
}

}  // namespace zt
