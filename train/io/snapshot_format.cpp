#include "train/io/snapshot_format.h"

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "data/shard.h"
#include "train/io/byte_fields.h"
#include "train/io/checkpoint_format.h"

namespace zt {
namespace {

constexpr char kMagic[8] = {'Z', 'T', 'S', 'N', 'A', 'P', '0', '1'};

// FNV-1a, 64 bits: a short, stable directory name for a path.
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return path;
  return std::string(cwd) + "/" + path;
}

}  // namespace

std::string encode_snapshot_header(const SnapshotRegionHeader& h) {
  std::string out(kMagic, 8);
  put_field<uint64_t>(out, h.slot_bytes);
  put_field<uint32_t>(out, h.model_id);
  put_field<uint32_t>(out, h.newest_slot);
  put_field<int64_t>(out, h.newest_step);
  put_field<uint32_t>(out, crc32_of(out.data(), out.size()));
  return out;
}

bool has_snapshot_magic(const char* bytes) { return std::memcmp(bytes, kMagic, 8) == 0; }

SnapshotRegionHeader decode_snapshot_header(const char* b, const std::string& path) {
  if (!has_snapshot_magic(b))
    throw DataError(path + ": not a zerotrain snapshot region (magic is not ZTSNAP01)");
  const uint32_t stored = get_field<uint32_t>(b + 32), computed = crc32_of(b, 32);
  if (stored != computed)
    throw DataError(path + ": region header checksum mismatch (stored " + crc32_hex(stored) +
                    ", computed " + crc32_hex(computed) + ")");
  SnapshotRegionHeader h;
  h.slot_bytes = get_field<uint64_t>(b + 8);
  h.model_id = get_field<uint32_t>(b + 16);
  h.newest_slot = get_field<uint32_t>(b + 20);
  h.newest_step = get_field<int64_t>(b + 24);
  if (h.newest_slot != kNoSlot && h.newest_slot > 1)
    throw DataError(path + ": region header names slot " + std::to_string(h.newest_slot) +
                    " (expected 0 or 1)");
  return h;
}

uint32_t model_id(const GPTConfig& m) {
  const int32_t keys[] = {m.n_layer, m.n_head, m.n_embd, m.vocab_size, m.seq_len};
  return crc32_of(keys, sizeof keys);
}

uint64_t snapshot_slot_bytes(uint64_t pieces, uint64_t elements) {
  return kRankHeaderBytes + kPieceEntryBytes * pieces + kStateBytesPerElement * elements;
}

uint64_t snapshot_region_bytes(uint64_t slot_bytes) {
  return kSnapshotHeaderBytes + 2 * slot_bytes;
}

std::string snapshot_root() {
  const char* env = std::getenv("ZT_SNAPSHOT_ROOT");
  return env && *env ? env : "/dev/shm/zerotrain";
}

std::string snapshot_node_dir(const std::string& root, const std::string& run_dir,
                              const std::string& host) {
  char run[17];
  std::snprintf(run, sizeof run, "%016llx",
                static_cast<unsigned long long>(fnv1a(absolute(run_dir))));
  return root + "/" + run + "/" + host;
}

std::string snapshot_region_name(int rank) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "rank_%05d.snap", rank);
  return buf;
}

int snapshot_region_rank(const std::string& name) {
  if (name.size() != 15 || name.rfind("rank_", 0) != 0 || name.compare(10, 5, ".snap") != 0)
    return -1;
  if (name.find_first_not_of("0123456789", 5) != 10) return -1;
  return std::atoi(name.c_str() + 5);
}

}  // namespace zt
