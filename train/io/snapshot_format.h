// The bytes of an in-memory snapshot store (train.recovery: memory): one
// region per rank, a file in shared memory that outlives the process, holding
// two slots so that a process killed while writing one leaves the other whole.
//
// STORE/<run>/<host>/rank_RRRRR.snap, STORE = snapshot_root(), <run> = 16
// hex digits of a hash of the run directory's absolute path, <host> = the
// node's hostname (emulated nodes share /dev/shm but not their hostnames):
//   offset  bytes  field (little-endian)
//   0       8      magic "ZTSNAP01"
//   8       8      uint64 slot bytes S (both slots; the exact rank-file size)
//   16      4      uint32 model id (model_id below)
//   20      4      uint32 newest published slot: 0, 1, or kNoSlot
//   24      8      int64  its step
//   32      4      uint32 CRC-32 of bytes [0, 32)
//   4096 + i S     slot i (i = 0, 1): the bytes of a checkpoint rank file
//                  (ZTCKPT02, train/io/checkpoint_format.h): step, world,
//                  rank, piece table, fp32 master, m and v, both CRC-32s.
// A write goes into the slot the header does not name: its magic is zeroed
// first, then its data, piece table and header are written (CRCs filled), the
// magic last, and only then does the region header name it. The slots verify
// on their own, so a torn region header costs nothing but the hint.
#pragma once
#include <cstdint>
#include <string>

#include "model/gpt_config.h"

namespace zt {

constexpr uint64_t kSnapshotHeaderBytes = 4096;  // the slots start page-aligned
constexpr uint64_t kSnapshotHeaderUsed = 36;
constexpr uint32_t kNoSlot = 0xffffffffu;

struct SnapshotRegionHeader {
  uint64_t slot_bytes = 0;
  uint32_t model_id = 0;
  uint32_t newest_slot = kNoSlot;
  int64_t newest_step = -1;
};

std::string encode_snapshot_header(const SnapshotRegionHeader& h);  // kSnapshotHeaderUsed bytes
// Checks magic and CRC; throws DataError "PATH: why".
SnapshotRegionHeader decode_snapshot_header(const char* bytes, const std::string& path);
bool has_snapshot_magic(const char* bytes);

// CRC-32 of the shape keys: a snapshot of another model is never loaded.
uint32_t model_id(const GPTConfig& m);

// A rank's slot: its pieces in the rank-file layout (48 + 16 x pieces + 12 x elements).
uint64_t snapshot_slot_bytes(uint64_t pieces, uint64_t elements);
// A rank's region: the header page and two slots.
uint64_t snapshot_region_bytes(uint64_t slot_bytes);

// STORE: $ZT_SNAPSHOT_ROOT when set and not empty (tests, scripts/cluster.sh
// use the same variable), else /dev/shm/zerotrain.
std::string snapshot_root();
// STORE/<run>/<host> of the run directory `run_dir` (made absolute here).
std::string snapshot_node_dir(const std::string& root, const std::string& run_dir,
                              const std::string& host);
std::string snapshot_region_name(int rank);  // "rank_00003.snap"
// The rank of a region file name, or -1.
int snapshot_region_rank(const std::string& name);

}  // namespace zt
