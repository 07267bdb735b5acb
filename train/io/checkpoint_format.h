// The bytes of a checkpoint, without ranks or engines: the per-rank state file
// (ZTCKPT02), meta.json and the COMPLETE marker, written and read back with
// every field checked. Checksums are zlib's CRC-32.
//
// rank_RRRRR.bin, little-endian:
//   offset  bytes  field
//   0       8      magic "ZTCKPT02"
//   8       8      int64  step (optimizer steps completed)
//   16      4      int32  world size that wrote it
//   20      4      int32  rank that wrote it
//   24      8      int64  piece count P
//   32      8      uint64 data bytes D (= 12 x the elements of all pieces)
//   40      4      uint32 CRC-32 of the data section
//   44      4      uint32 CRC-32 of bytes [0, 44) and the piece table
//   48      16 P   piece table: uint64 flat offset, uint64 length (elements)
//   48+16P  D      per piece: its fp32 master weights, then Adam m, then Adam v
// A reader checks the size fields against the file's real size before it
// allocates anything, and the header CRC before it trusts the piece table.
//
// meta.json records what the checkpoint holds (model shape, dtypes, tokenizer,
// the ZeRO layout, the effective config) and the size and CRC-32 of every other
// file; COMPLETE, written last, records the size and CRC-32 of meta.json.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/input/input_file.h"
#include "model/gpt_config.h"

namespace zt {

uint32_t crc32_of(const void* data, size_t n, uint32_t crc = 0);
// CRC of A followed by B, from CRC(A), CRC(B) and B's length.
uint32_t crc32_concat(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);
std::string crc32_hex(uint32_t crc);  // 8 lowercase hex digits

constexpr uint64_t kRankHeaderBytes = 48;
constexpr uint64_t kPieceEntryBytes = 16;
constexpr uint64_t kStateBytesPerElement = 12;  // fp32 master, m, v
constexpr int kMetaVersion = 2;
constexpr uint64_t kMetaMaxBytes = 16 << 20;
constexpr uint64_t kCompleteMaxBytes = 4096;

struct PieceExtent {
  uint64_t flat_begin = 0, n = 0;
};

struct RankFileHeader {
  int64_t step = 0;
  int32_t world = 0, rank = 0;
  uint64_t data_bytes = 0;
  uint32_t data_crc = 0;
  std::vector<PieceExtent> pieces;
  uint64_t table_end() const { return kRankHeaderBytes + kPieceEntryBytes * pieces.size(); }
};

// The header and piece table as bytes, their CRC filled in.
std::string encode_rank_header(const RankFileHeader& h);
// Exactly n bytes at an offset of a rank file's bytes: a file, or an
// in-memory snapshot slot (train/io/snapshot_format.h) holding the same bytes.
using ReadAt = std::function<void(uint64_t offset, void* dst, size_t n)>;
// Reads the header and piece table of the `size` bytes at `path`, checking
// magic, sizes (against `size`) and the header CRC. Throws DataError naming path.
RankFileHeader read_rank_header(const std::string& path, uint64_t size, const ReadAt& read_at);
RankFileHeader read_rank_header(const InputFile& f);
// Reads the whole data section, checks its CRC against the header's, and
// returns the CRC of the whole file. Throws DataError naming the file.
uint32_t verify_rank_data(const std::string& path, const ReadAt& read_at, const RankFileHeader& h);
uint32_t verify_rank_data(const InputFile& f, const RankFileHeader& h);
// Byte offset of each piece's master block (its m and v blocks follow).
std::vector<uint64_t> piece_data_offsets(const RankFileHeader& h);

std::string rank_file_name(int rank);  // "rank_00003.bin"

struct FileRecord {
  std::string name;
  uint64_t bytes = 0;
  uint32_t crc32 = 0;
};

struct RankRecord {
  FileRecord file;
  uint64_t pieces = 0, elements = 0;
};

// "byte", or a sentencepiece model file, with its size and CRC when it was readable.
struct TokenizerIdentity {
  std::string name;
  bool has_digest = false;
  uint64_t bytes = 0;
  uint32_t crc32 = 0;
};
TokenizerIdentity tokenizer_identity(const std::string& name);

struct CheckpointMeta {
  int64_t step = 0;
  int world = 0;
  int stage = 0;
  GPTConfig model;
  uint64_t params = 0, padded_params = 0;
  std::string model_dtype, device;  // of the run that wrote it; the state is always fp32
  TokenizerIdentity tokenizer;
  FileRecord config_yaml;
  std::vector<RankRecord> ranks;
  std::string config_json;  // the effective config, written for readers; not parsed back
};

// Parameters of a GPT of this shape (as model/param_table.cpp lays them out),
// or 0 when the count would not fit in 62 bits.
uint64_t gpt_param_count(const GPTConfig& m);

std::string encode_meta(const CheckpointMeta& m);
// Every field typed and range-checked, the ranks' files consistent with the
// parameter count. Throws DataError "PATH: field 'step': expected ..., got ...".
CheckpointMeta parse_meta(const std::string& text, const std::string& path);

std::string encode_complete(const FileRecord& meta_json);
FileRecord parse_complete(const std::string& text, const std::string& path);

}  // namespace zt
