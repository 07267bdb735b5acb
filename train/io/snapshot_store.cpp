#include "train/io/snapshot_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "data/shard.h"
#include "train/io/atomic_file.h"

namespace zt {
namespace {

[[noreturn]] void io_fail(const std::string& path, const std::string& what) {
  throw IoError(path + ": " + what + ": " + std::strerror(errno));
}

std::string parent_of(const std::string& dir) {
  const size_t slash = dir.find_last_of('/');
  return slash == std::string::npos || slash == 0 ? "/" : dir.substr(0, slash);
}

// The node directory, its run directory and the store root, each once it is
// empty (rmdir fails while another rank, node or run still has regions there).
void remove_empty_dirs(const std::string& node_dir) {
  if (rmdir(node_dir.c_str()) != 0) return;
  const std::string run = parent_of(node_dir);
  if (rmdir(run.c_str()) == 0) rmdir(parent_of(run).c_str());
}

}  // namespace

uint64_t SnapshotSource::elements() const {
  uint64_t n = 0;
  for (const PieceExtent& p : pieces) n += p.n;
  return n;
}

SnapshotRegion::SnapshotRegion(const std::string& path, int fd, char* base, uint64_t bytes)
    : path_(path), fd_(fd), base_(base), bytes_(bytes) {
  try {
    header_ = decode_snapshot_header(base_, path_);
    header_ok_ = true;
  } catch (const DataError& e) {
    header_error_ = e.what();
  }
}

SnapshotRegion::~SnapshotRegion() {
  if (base_) munmap(base_, bytes_);
  if (fd_ >= 0) close(fd_);
}

std::unique_ptr<SnapshotRegion> SnapshotRegion::create(const std::string& path, uint64_t slot_bytes,
                                                       uint32_t model_id) {
  const uint64_t bytes = snapshot_region_bytes(slot_bytes);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) io_fail(path, "cannot create the snapshot region");
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    io_fail(path, "cannot stat the snapshot region");
  }
  bool keep = false;
  if (static_cast<uint64_t>(st.st_size) == bytes) {
    char head[kSnapshotHeaderUsed];
    if (pread(fd, head, sizeof head, 0) == static_cast<ssize_t>(sizeof head)) try {
        const SnapshotRegionHeader h = decode_snapshot_header(head, path);
        keep = h.slot_bytes == slot_bytes && h.model_id == model_id;
      } catch (const DataError&) {
      }
  }
  if (!keep) {
    SnapshotRegionHeader h;
    h.slot_bytes = slot_bytes;
    h.model_id = model_id;
    const std::string head = encode_snapshot_header(h);
    const int err = ftruncate(fd, 0) != 0 ? errno : posix_fallocate(fd, 0, bytes);
    if (err != 0 || pwrite(fd, head.data(), head.size(), 0) != static_cast<ssize_t>(head.size())) {
      errno = err != 0 ? err : errno;
      close(fd);
      ::unlink(path.c_str());
      io_fail(path, "cannot reserve " + std::to_string(bytes) + " bytes for the snapshot region");
    }
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    close(fd);
    io_fail(path, "cannot map the snapshot region");
  }
  return std::unique_ptr<SnapshotRegion>(
      new SnapshotRegion(path, fd, static_cast<char*>(base), bytes));
}

std::unique_ptr<SnapshotRegion> SnapshotRegion::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw DataError(path + ": cannot open the snapshot region: " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < kSnapshotHeaderBytes) {
    close(fd);
    throw DataError(path + ": truncated snapshot region (" + std::to_string(st.st_size) +
                    " bytes, shorter than its " + std::to_string(kSnapshotHeaderBytes) +
                    "-byte header page)");
  }
  const uint64_t bytes = static_cast<uint64_t>(st.st_size);
  void* base = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    close(fd);
    throw DataError(path + ": cannot map the snapshot region: " + std::strerror(errno));
  }
  return std::unique_ptr<SnapshotRegion>(
      new SnapshotRegion(path, fd, static_cast<char*>(base), bytes));
}

char* SnapshotRegion::slot_base(int slot) const {
  return base_ + kSnapshotHeaderBytes + static_cast<uint64_t>(slot) * header_.slot_bytes;
}

int SnapshotRegion::write_slot(const SnapshotSource& src, int64_t step, int world, int rank,
                               const std::function<void()>& part_way) {
  const int slot = header_.newest_slot == 0 ? 1 : 0;
  RankFileHeader h;
  h.step = step;
  h.world = world;
  h.rank = rank;
  h.pieces = src.pieces;
  h.data_bytes = kStateBytesPerElement * src.elements();
  if (h.table_end() + h.data_bytes != header_.slot_bytes)
    throw std::logic_error(path_ + ": a snapshot of " +
                           std::to_string(h.table_end() + h.data_bytes) + " bytes for slots of " +
                           std::to_string(header_.slot_bytes));
  char* out = slot_base(slot);
  std::memset(out, 0, 8);  // no magic: the slot holds no snapshot until it is complete
  char* at = out + h.table_end();
  for (size_t i = 0; i < src.pieces.size(); i++)
    for (const float* a : src.state) {
      const size_t bytes = src.pieces[i].n * sizeof(float);
      std::memcpy(at, a + src.shard_offsets[i], bytes);
      h.data_crc = crc32_of(at, bytes, h.data_crc);
      at += bytes;
      if (part_way && i == 0 && a == src.state[0]) part_way();
    }
  const std::string head = encode_rank_header(h);
  std::memcpy(out + 8, head.data() + 8, head.size() - 8);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  std::memcpy(out, head.data(), 8);
  return slot;
}

void SnapshotRegion::publish(int slot, int64_t step) {
  header_.newest_slot = static_cast<uint32_t>(slot);
  header_.newest_step = step;
  const std::string head = encode_snapshot_header(header_);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  std::memcpy(base_, head.data(), head.size());
}

void SnapshotRegion::drop_unnamed_slot() {
  if (header_.newest_slot == kNoSlot) return;
  std::memset(slot_base(header_.newest_slot == 0 ? 1 : 0), 0, 8);
}

std::vector<SnapshotRegion::Slot> SnapshotRegion::valid_slots(
    const std::function<void(const std::string&)>& on_reject) const {
  std::vector<Slot> out;
  // The slots verify on their own: a region header that does not costs only
  // its hint, and the slot size follows from the region's size.
  const uint64_t slot_bytes = header_ok_ ? header_.slot_bytes : (bytes_ - kSnapshotHeaderBytes) / 2;
  if (!header_ok_) on_reject(header_error_ + "; both slots checked");
  if (bytes_ != snapshot_region_bytes(slot_bytes)) {
    on_reject(path_ + ": the region has " + std::to_string(bytes_) + " bytes, its header's slots " +
              std::to_string(snapshot_region_bytes(slot_bytes)));
    return out;
  }
  for (int i = 0; i < 2; i++) {
    const char* base = base_ + kSnapshotHeaderBytes + static_cast<uint64_t>(i) * slot_bytes;
    char magic[8];
    std::memcpy(magic, base, 8);
    if (std::count(magic, magic + 8, '\0') == 8) continue;
    const std::string where = path_ + " slot " + std::to_string(i);
    const ReadAt read_at = [base](uint64_t at, void* dst, size_t n) {
      std::memcpy(dst, base + at, n);
    };
    try {
      Slot s;
      s.index = i;
      s.header = read_rank_header(where, slot_bytes, read_at);
      s.slot_bytes = slot_bytes;
      verify_rank_data(where, read_at, s.header);
      s.data_offsets = piece_data_offsets(s.header);
      out.push_back(std::move(s));
    } catch (const DataError& e) {
      on_reject(e.what());
    }
  }
  std::sort(out.begin(), out.end(),
            [](const Slot& a, const Slot& b) { return a.header.step > b.header.step; });
  return out;
}

const float* SnapshotRegion::piece_data(const Slot& s, size_t i, int k) const {
  const char* slot = base_ + kSnapshotHeaderBytes + static_cast<uint64_t>(s.index) * s.slot_bytes;
  return reinterpret_cast<const float*>(slot + s.data_offsets[i] +
                                        static_cast<uint64_t>(k) * s.header.pieces[i].n * 4);
}

std::string store_fit_problem(const std::string& node_dir, uint64_t need) {
  std::string at = node_dir;
  struct statvfs vfs;
  while (statvfs(at.c_str(), &vfs) != 0) {
    if (at == "/") return node_dir + ": no file system can be read there";
    at = parent_of(at);
  }
  uint64_t held = 0;
  struct stat st;
  for (const auto& r : regions_in(node_dir))
    if (stat(r.second.c_str(), &st) == 0) held += static_cast<uint64_t>(st.st_size);
  const uint64_t free = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize + held;
  if (need <= free) return "";
  return "needs " + std::to_string(need) + " bytes, but " + at + " has " + std::to_string(free) +
         " bytes free" +
         (held > 0 ? " (" + std::to_string(held) + " of them this run's regions)" : "");
}

void make_store_dirs(const std::string& dir) {
  // A run that ends removes the store's empty directories: when a parent
  // vanishes between two mkdirs, start again.
  for (int attempt = 0;; attempt++) {
    bool vanished = false;
    for (size_t p = dir.find('/', 1); !vanished; p = dir.find('/', p + 1)) {
      const std::string part = dir.substr(0, p);
      if (mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
        if (errno != ENOENT || attempt == 3) io_fail(part, "cannot create directory");
        vanished = true;
      }
      if (p == std::string::npos) break;
    }
    if (!vanished) return;
  }
}

std::vector<std::pair<int, std::string>> regions_in(const std::string& node_dir) {
  std::vector<std::pair<int, std::string>> out;
  if (DIR* d = opendir(node_dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const int r = snapshot_region_rank(e->d_name);
      if (r >= 0) out.push_back({r, node_dir + "/" + e->d_name});
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void remove_region(const std::string& node_dir, int rank) {
  ::unlink((node_dir + "/" + snapshot_region_name(rank)).c_str());
  remove_empty_dirs(node_dir);
}

void remove_node_store(const std::string& node_dir) {
  for (const auto& r : regions_in(node_dir)) ::unlink(r.second.c_str());
  remove_empty_dirs(node_dir);
}

}  // namespace zt
