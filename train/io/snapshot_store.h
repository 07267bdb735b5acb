// One rank's in-memory snapshot region (train/io/snapshot_format.h has the
// bytes): a file in shared memory mapped into the process, written slot by
// slot while training runs and read back by --recover after a failure. The
// node's store is the directory of every rank's region on that node.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "train/io/checkpoint_format.h"
#include "train/io/snapshot_format.h"

namespace zt {

// What one snapshot copies: the rank's pieces (flat extents, and where each
// starts in the rank's shard) and its three state arrays on the host.
struct SnapshotSource {
  std::vector<PieceExtent> pieces;
  std::vector<uint64_t> shard_offsets;
  const float* state[3] = {nullptr, nullptr, nullptr};  // master, m, v (shard offsets)
  uint64_t elements() const;
};

class SnapshotRegion {
 public:
  // For writing: a region of this slot size and model is kept as it is (a
  // relaunch keeps its last snapshot until it writes a newer one); anything
  // else at `path` is replaced by an empty region, its space reserved so that
  // a full /dev/shm fails here (one line) and not as a SIGBUS mid-copy.
  static std::unique_ptr<SnapshotRegion> create(const std::string& path, uint64_t slot_bytes,
                                                uint32_t model_id);
  // For reading an existing region; throws DataError naming the file.
  static std::unique_ptr<SnapshotRegion> open(const std::string& path);
  ~SnapshotRegion();
  SnapshotRegion(const SnapshotRegion&) = delete;
  SnapshotRegion& operator=(const SnapshotRegion&) = delete;

  const std::string& path() const { return path_; }
  const SnapshotRegionHeader& header() const { return header_; }

  // Copies `src` as the snapshot of `step` into the slot the header does not
  // name, and returns that slot; publish() then names it. Not thread-safe
  // with itself; reads nothing the caller changes meanwhile. `part_way` runs
  // once the first piece's master weights are in (a test hook stops the
  // process there: train/loop/fault_stop.h).
  int write_slot(const SnapshotSource& src, int64_t step, int world, int rank,
                 const std::function<void()>& part_way = {});
  void publish(int slot, int64_t step);
  // Zeroes the magic of the slot the header does not name, so that a snapshot
  // from before a relaunch (maybe of another config) can never be mixed into a
  // later recovery; the named slot stays whole meanwhile.
  void drop_unnamed_slot();

  // A slot that verified: its header (step, world, rank, pieces) and where
  // each piece's master block starts in the slot (its m and v blocks follow).
  struct Slot {
    int index = 0;
    uint64_t slot_bytes = 0;
    RankFileHeader header;
    std::vector<uint64_t> data_offsets;
  };
  // The slots whose sizes and CRC-32s verify, newest step first. A slot or
  // region header that does not verify goes to on_reject as one line naming the
  // file and why; a slot never completed (its magic not yet written) is skipped.
  std::vector<Slot> valid_slots(const std::function<void(const std::string&)>& on_reject) const;
  // Array k (0 master, 1 m, 2 v) of piece i of a valid slot.
  const float* piece_data(const Slot& s, size_t i, int k) const;

 private:
  SnapshotRegion(const std::string& path, int fd, char* base, uint64_t bytes);
  char* slot_base(int slot) const;
  std::string path_;
  int fd_ = -1;
  char* base_ = nullptr;
  uint64_t bytes_ = 0;
  SnapshotRegionHeader header_;
  bool header_ok_ = false;
  std::string header_error_;
};

// "" when a node store of `need` bytes fits on the file system of node_dir's
// nearest existing ancestor (statvfs: the bytes free to unprivileged writers,
// plus the regions already in node_dir, which are reused or replaced); else
// why, with both numbers.
std::string store_fit_problem(const std::string& node_dir, uint64_t need);
// mkdir -p.
void make_store_dirs(const std::string& dir);
// The region files of a node's store: (rank, path), by rank.
std::vector<std::pair<int, std::string>> regions_in(const std::string& node_dir);
// Removes a region file, then the node directory, the run's directory and
// the store root, each once it is empty.
void remove_region(const std::string& node_dir, int rank);
// Removes every region of the node directory, then the empty directories above it.
void remove_node_store(const std::string& node_dir);

}  // namespace zt
