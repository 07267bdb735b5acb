// data.train_fallback / data.val_fallback: shards to read, with a notice, when
// data.train / data.val match no file. The GPT-2 presets name FineWeb's shards
// first and the KJV's GPT-2 shards (`make data-gpt2`) second, so that they run
// out of the box and still read FineWeb once it is there.
#pragma once
#include <string>
#include <vector>

#include "train/config/config.h"

namespace zt {

// Replaces each of data.train and (when need_val) data.val that matches no
// file by its fallback, if it has one; returns one notice per replacement.
// Throws DataError naming both when the fallback matches nothing either.
std::vector<std::string> apply_data_fallbacks(DataConfig& data, bool need_val);

}  // namespace zt
