#include "train/loop/data_fallback.h"

#include "data/shard.h"

namespace zt {
namespace {

bool matches_a_file(const std::string& pattern) {
  try {
    expand_glob(pattern);
    return true;
  } catch (const DataError&) {
    return false;
  }
}

void fall_back(const char* key, std::string& value, const std::string& fallback,
               std::vector<std::string>& notes) {
  if (fallback.empty() || matches_a_file(value)) return;
  if (!matches_a_file(fallback))
    throw DataError(std::string("data.") + key + ": " + value +
                    " matches no files, nor does data." + key + "_fallback " + fallback);
  notes.push_back(std::string("data.") + key + ": " + value + " matches no files; reading data." +
                  key + "_fallback " + fallback + " instead");
  value = fallback;
}

}  // namespace

std::vector<std::string> apply_data_fallbacks(DataConfig& data, bool need_val) {
  std::vector<std::string> notes;
  fall_back("train", data.train, data.train_fallback, notes);
  if (need_val) fall_back("val", data.val, data.val_fallback, notes);
  return notes;
}

}  // namespace zt
