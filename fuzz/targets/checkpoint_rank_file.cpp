// A checkpoint's rank_00000.bin: its header and piece table (read_rank_header),
// its data checksum, then the whole reader as `--resume` and `export` use it,
// with a meta.json that agrees with the header, so that the pieces' coverage
// of the seed model's parameters and the reads across pieces are exercised.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "data/input/input_file.h"
#include "fuzz/support/parse_outcome.h"
#include "fuzz/support/scratch_file.h"
#include "fuzz/support/seed_model.h"
#include "train/io/checkpoint.h"
#include "train/io/checkpoint_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string name = zt::rank_file_name(0);
  const std::string path = zt::fuzz::write_scratch(name, data, size);
  zt::fuzz::parse_or_reject([&] {
    const zt::InputFile f(path, "checkpoint shard");
    const zt::RankFileHeader h = zt::read_rank_header(f);
    zt::CheckpointMeta meta;
    meta.step = h.step;
    meta.world = 1;
    meta.model = zt::fuzz::seed_model();
    meta.params = zt::gpt_param_count(meta.model);
    zt::RankRecord rank;
    rank.file = {name, f.size(), zt::verify_rank_data(f, h)};
    rank.pieces = h.pieces.size();
    meta.ranks.push_back(rank);
    const zt::CheckpointReader reader(zt::fuzz::scratch_dir(), meta, [](int) { return true; });
    std::vector<float> state(meta.params);
    for (int k = 0; k < 3; k++) reader.read(0, meta.params, k, state.data());
  });
  return 0;
}
