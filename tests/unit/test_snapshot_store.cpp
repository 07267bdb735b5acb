// In-memory snapshot regions (train/io/snapshot_store.h): a snapshot reads
// back bit for bit; a copy killed midway never loads and the previous
// snapshot is used; a corrupted byte is rejected by its CRC-32 with one line
// naming the region and slot, and the other slot is used; a region header
// that does not verify costs only its hint; a store that does not fit is refused.
#include <sys/stat.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "train/io/snapshot_format.h"
#include "train/io/snapshot_store.h"

namespace zt {
namespace {

// Two pieces of a 40-element shard (flat [100, 110) at shard offset 0 and
// [300, 320) at shard offset 16), state values that name step, array and index.
struct State {
  std::vector<float> a[3];
  SnapshotSource source;
  explicit State(int64_t step) {
    for (int k = 0; k < 3; k++) {
      a[k].resize(40);
      for (size_t i = 0; i < 40; i++) a[k][i] = static_cast<float>(step * 1000 + k * 100 + i) / 8;
      source.state[k] = a[k].data();
    }
    source.pieces = {{100, 10}, {300, 20}};
    source.shard_offsets = {0, 16};
  }
};

const uint64_t kSlot = snapshot_slot_bytes(2, 30);

std::vector<SnapshotRegion::Slot> slots_of(const std::string& path,
                                           std::vector<std::string>& rejected) {
  rejected.clear();
  return SnapshotRegion::open(path)->valid_slots(
      [&](const std::string& why) { rejected.push_back(why); });
}

// The bytes of a region file at `offset` changed in place (as a crash or bit flip would).
void poke(const std::string& path, uint64_t offset, const std::string& bytes) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

uint64_t slot_offset(int slot) { return kSnapshotHeaderBytes + slot * kSlot; }

}  // namespace

TEST_CASE("snapshot slots: sizes, and a snapshot reads back bit for bit", "[snapshot]") {
  CHECK(kSlot == 48 + 16 * 2 + 12 * 30);
  CHECK(snapshot_region_bytes(kSlot) == 4096 + 2 * kSlot);
  TestDir dir;
  const std::string path = dir.file(snapshot_region_name(3));
  CHECK(snapshot_region_rank(snapshot_region_name(3)) == 3);
  CHECK(snapshot_region_rank("rank_0003.snap") == -1);
  const State s(7);
  auto region = SnapshotRegion::create(path, kSlot, 42);
  const int slot = region->write_slot(s.source, 7, 4, 3);
  region->publish(slot, 7);
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK(static_cast<uint64_t>(st.st_size) == snapshot_region_bytes(kSlot));

  std::vector<std::string> rejected;
  auto reader = SnapshotRegion::open(path);
  const auto slots = reader->valid_slots([&](const std::string& w) { rejected.push_back(w); });
  CHECK(rejected.empty());
  REQUIRE(slots.size() == 1);
  CHECK(reader->header().newest_slot == static_cast<uint32_t>(slot));
  CHECK(reader->header().newest_step == 7);
  CHECK(reader->header().model_id == 42);
  const RankFileHeader& h = slots[0].header;
  CHECK(h.step == 7);
  CHECK(h.world == 4);
  CHECK(h.rank == 3);
  REQUIRE(h.pieces.size() == 2);
  CHECK(h.pieces[1].flat_begin == 300);
  CHECK(h.pieces[1].n == 20);
  for (int k = 0; k < 3; k++) {
    // piece 1, element 5: shard offset 16 + 5
    CHECK(reader->piece_data(slots[0], 1, k)[5] == static_cast<float>(7000 + k * 100 + 21) / 8);
    CHECK(reader->piece_data(slots[0], 0, k)[9] == static_cast<float>(7000 + k * 100 + 9) / 8);
  }
}

TEST_CASE("snapshot slots alternate; a copy killed midway leaves the previous one", "[snapshot]") {
  TestDir dir;
  const std::string path = dir.file("rank_00000.snap");
  auto region = SnapshotRegion::create(path, kSlot, 1);
  const int first = region->write_slot(State(1).source, 1, 1, 0);
  region->publish(first, 1);
  const int second = region->write_slot(State(2).source, 2, 1, 0);
  CHECK(second != first);
  region->publish(second, 2);
  std::vector<std::string> rejected;
  auto slots = slots_of(path, rejected);
  REQUIRE(slots.size() == 2);
  CHECK(slots[0].header.step == 2);  // newest first
  CHECK(slots[1].header.step == 1);

  // Step 3 goes into the slot of step 1; the process dies after half its data:
  // the magic is zeroed before the data and written after it, so the slot
  // holds no snapshot, and the header still names step 2's.
  const int third = region->write_slot(State(3).source, 3, 1, 0);
  CHECK(third == first);
  region.reset();
  poke(path, slot_offset(third), std::string(8, '\0'));
  poke(path, slot_offset(third) + 48 + 32 + 180, std::string(180, '\x7f'));
  slots = slots_of(path, rejected);
  CHECK(rejected.empty());
  REQUIRE(slots.size() == 1);
  CHECK(slots[0].header.step == 2);
  CHECK(SnapshotRegion::open(path)->header().newest_step == 2);

  // Reopened for writing (a relaunch), the region keeps step 2 and writes the other slot.
  region = SnapshotRegion::create(path, kSlot, 1);
  CHECK(region->write_slot(State(4).source, 4, 1, 0) == third);
  region->publish(third, 4);
  region->drop_unnamed_slot();  // a relaunch's start: only its own snapshot remains
  slots = slots_of(path, rejected);
  CHECK(rejected.empty());
  REQUIRE(slots.size() == 1);
  CHECK(slots[0].header.step == 4);
  // Another slot size or model replaces the region.
  region = SnapshotRegion::create(path, kSlot + 12, 1);
  CHECK(slots_of(path, rejected).empty());
}

TEST_CASE("a corrupted snapshot is rejected by its CRC and the other slot is used", "[snapshot]") {
  TestDir dir;
  const std::string path = dir.file("rank_00001.snap");
  auto region = SnapshotRegion::create(path, kSlot, 1);
  region->publish(region->write_slot(State(5).source, 5, 2, 1), 5);
  const int newest = region->write_slot(State(6).source, 6, 2, 1);
  region->publish(newest, 6);
  region.reset();
  // One flipped bit in the newest slot's Adam v (the data's last part).
  poke(path, slot_offset(newest) + kSlot - 7, std::string(1, '\x01'));
  std::vector<std::string> rejected;
  auto slots = slots_of(path, rejected);
  REQUIRE(slots.size() == 1);
  CHECK(slots[0].header.step == 5);
  REQUIRE(rejected.size() == 1);
  require_parts(rejected[0],
                {path + " slot " + std::to_string(newest) + ": ", "data checksum mismatch"});
  CHECK(rejected[0].find('\n') == std::string::npos);

  // A flipped bit in the piece table: the header CRC.
  poke(path, slot_offset(1 - newest) + 48 + 3, std::string(1, '\x10'));
  slots = slots_of(path, rejected);
  CHECK(slots.empty());
  REQUIRE(rejected.size() == 2);  // slot by slot
  require_parts(rejected[1 - newest],
                {"slot " + std::to_string(1 - newest) + ": ", "header checksum mismatch"});
}

TEST_CASE("a region header that does not verify costs only its hint", "[snapshot]") {
  TestDir dir;
  const std::string path = dir.file("rank_00000.snap");
  auto region = SnapshotRegion::create(path, kSlot, 9);
  region->publish(region->write_slot(State(3).source, 3, 1, 0), 3);
  region.reset();
  poke(path, 24, std::string(1, '\x05'));  // the newest step, under the header's CRC
  std::vector<std::string> rejected;
  const auto slots = slots_of(path, rejected);
  REQUIRE(rejected.size() == 1);
  require_parts(rejected[0], {path, "region header checksum mismatch", "both slots checked"});
  REQUIRE(slots.size() == 1);
  CHECK(slots[0].header.step == 3);
}

TEST_CASE("a snapshot store that does not fit is refused, naming both sizes", "[snapshot]") {
  TestDir dir;
  const std::string node = dir.path + "/run/host";
  CHECK(store_fit_problem(node, 4096) == "");
  const std::string problem = store_fit_problem(node, uint64_t(1) << 62);
  require_parts(problem, {"needs 4611686018427387904 bytes, but " + dir.path, "bytes free"});
  make_store_dirs(node);
  SnapshotRegion::create(node + "/" + snapshot_region_name(0), kSlot, 1);
  CHECK(regions_in(node).size() == 1);
  remove_region(node, 0);
  struct stat st;
  CHECK(stat((dir.path + "/run").c_str(), &st) != 0);  // the empty directories went too
}

}  // namespace zt
