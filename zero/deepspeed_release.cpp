#include "zero/deepspeed_release.h"

#include <stdexcept>

namespace zt {

std::string DeepSpeedRelease::str() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

DeepSpeedRelease parse_deepspeed_release(const std::string& text) {
  int parts[3] = {0, 0, 0};
  size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    size_t digits = 0;
    int value = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9' && digits < 5) {
      value = value * 10 + (text[pos] - '0');
      ++pos;
      ++digits;
    }
    bool separator_ok = i < 2 ? (pos < text.size() && text[pos] == '.') : pos == text.size();
    if (digits == 0 || digits > 4 || !separator_ok)
      throw std::invalid_argument("DeepSpeed release '" + text +
                                  "': expected MAJOR.MINOR.PATCH, e.g. 0.14.4");
    parts[i] = value;
    if (i < 2) ++pos;
  }
  return DeepSpeedRelease{parts[0], parts[1], parts[2]};
}

}  // namespace zt
