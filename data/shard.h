// Token shards in llm.c's file format, and glob expansion for shard lists.
//
// Layout: a 1024-byte header of 256 little-endian int32, then the tokens.
//   header[0] = magic, header[1] = version, header[2] = token count (> 0)
//   magic 20240520, version 1: tokens are little-endian uint16 (GPT-2 vocab)
//   magic 20240801, version 7: tokens are little-endian uint32 (larger vocabs)
// The remaining header words are zero when we write and ignored when we read.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace zt {

// Any problem with data files, tokenizers or the loader's arguments; the
// message is one line and starts with the file (or glob) it is about.
struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

constexpr int kShardHeaderInts = 256;
constexpr int64_t kShardHeaderBytes = kShardHeaderInts * 4;
constexpr int32_t kShardMagicU16 = 20240520;
constexpr int32_t kShardVersionU16 = 1;
constexpr int32_t kShardMagicU32 = 20240801;
constexpr int32_t kShardVersionU32 = 7;

// Writes `tokens` (non-empty; each < 65536 unless `wide`) as a shard at `path`.
// Atomic: the data goes to a temporary file in the same directory, is fsynced,
// then renamed over `path`, so readers never see a half-written shard.
void write_shard(const std::string& path, const std::vector<uint32_t>& tokens, bool wide);

// Reads and validates a shard of either width. Checks, in order: the file can
// be opened, holds at least the header, magic, version matching the magic,
// count > 0, exact file size, and every token < vocab_size.
std::vector<uint32_t> read_shard(const std::string& path, int vocab_size);

// The files matching a glob pattern (or the one named file), sorted bytewise.
// Throws DataError naming the pattern when nothing matches.
std::vector<std::string> expand_glob(const std::string& pattern_or_file);

}  // namespace zt
