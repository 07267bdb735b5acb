// A DeepSpeed release number (MAJOR.MINOR.PATCH), the one type every part of
// zerotrain uses to say which release's behaviour it means: the ZeRO
// schedule's behaviour set, explain's comparison and the ds_config import's
// key table all take it.
#pragma once
#include <string>

namespace zt {

struct DeepSpeedRelease {
  int major = 0;
  int minor = 0;
  int patch = 0;
  std::string str() const;
  friend bool operator<(const DeepSpeedRelease& a, const DeepSpeedRelease& b) {
    if (a.major != b.major) return a.major < b.major;
    if (a.minor != b.minor) return a.minor < b.minor;
    return a.patch < b.patch;
  }
  friend bool operator==(const DeepSpeedRelease& a, const DeepSpeedRelease& b) {
    return a.major == b.major && a.minor == b.minor && a.patch == b.patch;
  }
  friend bool operator!=(const DeepSpeedRelease& a, const DeepSpeedRelease& b) { return !(a == b); }
  friend bool operator<=(const DeepSpeedRelease& a, const DeepSpeedRelease& b) { return !(b < a); }
};

// "0.14.4" -> {0, 14, 4}. Exactly three dot-separated decimal numbers, each
// at most 4 digits; anything else (a suffix such as "rc1", a sign, a space)
// throws std::invalid_argument naming the text and the expected form.
DeepSpeedRelease parse_deepspeed_release(const std::string& text);

}  // namespace zt
