#include "zero/optim/offload_store.h"

#include <aio.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace zt {
namespace {

std::string errno_text(int e) { return std::strerror(e); }

class HostStore : public OffloadStore {
 public:
  HostStore(DeviceServices& services, size_t bytes, MemCategory cat, bool pinned)
      : services_(services), data_(static_cast<char*>(services.alloc_host(bytes, cat, pinned))) {}
  ~HostStore() override { services_.release_host(data_); }
  char* host_data() override { return data_; }
  int start_read(size_t off, size_t n, void* dst) override {
    std::memcpy(dst, data_ + off, n);
    return -1;
  }
  int start_write(size_t off, size_t n, const void* src) override {
    std::memcpy(data_ + off, src, n);
    return -1;
  }
  void wait(int) override {}

 private:
  DeviceServices& services_;
  char* data_;
};

}  // namespace

// mkdtemp's unique directory; the files in it are unlinked by their stores.
class NvmeDirectory {
 public:
  NvmeDirectory(const std::string& root, const std::string& key, int rank) : key_(key) {
    const std::string problem = nvme_path_problem(root);
    if (!problem.empty()) throw std::runtime_error(key + ".nvme_path: " + problem);
    std::string tmpl = root + "/zerotrain-" + std::to_string(getpid()) + "-rank" +
                       std::to_string(rank) + "-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data()))
      throw std::runtime_error(key + ".nvme_path '" + root +
                               "': cannot make a directory there: " + errno_text(errno));
    path_ = buf.data();
  }
  ~NvmeDirectory() { rmdir(path_.c_str()); }
  const std::string& path() const { return path_; }
  const std::string& key() const { return key_; }

 private:
  std::string key_, path_;
};

namespace {

// A preallocated file (posix_fallocate: a full disk fails here, at start, not
// mid-step); transfers are aio requests in a table of slots, tickets index it.
class FileStore : public OffloadStore {
 public:
  FileStore(std::shared_ptr<NvmeDirectory> dir, const std::string& name, size_t bytes,
            MemCategory cat)
      : dir_(std::move(dir)), path_(dir_->path() + "/" + name), bytes_(bytes) {
    fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd_ < 0) fail("creating", errno);
    const int err = bytes ? posix_fallocate(fd_, 0, static_cast<off_t>(bytes)) : 0;
    if (err != 0) {
      close(fd_);
      unlink(path_.c_str());
      fail("allocating " + std::to_string(bytes) + " bytes for", err);
    }
    nvme_ledger().on_alloc(this, bytes, cat);
  }
  ~FileStore() override {
    for (size_t i = 0; i < slots_.size(); i++)
      if (busy_[i]) finish(static_cast<int>(i), false);
    nvme_ledger().on_free(this);
    close(fd_);
    unlink(path_.c_str());
  }
  char* host_data() override { return nullptr; }
  int start_read(size_t off, size_t n, void* dst) override { return start(off, n, dst, false); }
  int start_write(size_t off, size_t n, const void* src) override {
    return start(off, n, const_cast<void*>(src), true);
  }
  void wait(int ticket) override { finish(ticket, true); }

 private:
  [[noreturn]] void fail(const std::string& what, int err) const {
    throw std::runtime_error(dir_->key() + ".nvme_path: " + what + " " + path_ +
                             " failed: " + errno_text(err));
  }
  int start(size_t off, size_t n, void* buf, bool write) {
    if (off + n > bytes_) throw std::logic_error("offload file store: range past the end");
    size_t i = 0;
    while (i < busy_.size() && busy_[i]) i++;
    if (i == busy_.size()) {
      slots_.emplace_back(new aiocb);
      busy_.push_back(false);
      writes_.push_back(false);
      submitted_.push_back(false);
    }
    aiocb& cb = *slots_[i];
    std::memset(&cb, 0, sizeof(cb));
    cb.aio_fildes = fd_;
    cb.aio_offset = static_cast<off_t>(off);
    cb.aio_buf = buf;
    cb.aio_nbytes = n;
    cb.aio_sigevent.sigev_notify = SIGEV_NONE;
    // A full aio queue (EAGAIN) leaves the request to be done synchronously at wait().
    const bool submitted = (write ? aio_write(&cb) : aio_read(&cb)) == 0;
    if (!submitted && errno != EAGAIN) fail(write ? "writing" : "reading", errno);
    busy_[i] = true;
    writes_[i] = write;
    submitted_[i] = submitted;
    return static_cast<int>(i);
  }
  void finish(int ticket, bool report) {
    aiocb& cb = *slots_.at(ticket);
    const bool write = writes_[ticket];
    size_t done = 0;
    int err = 0;
    if (submitted_[ticket]) {
      const aiocb* list[1] = {&cb};
      while ((err = aio_error(&cb)) == EINPROGRESS) aio_suspend(list, 1, nullptr);
      const ssize_t got = aio_return(&cb);
      if (err == 0) done = static_cast<size_t>(got);
    }
    // Short transfers and unsubmitted requests finish synchronously.
    char* buf = static_cast<char*>(const_cast<void*>(cb.aio_buf));
    while (err == 0 && done < cb.aio_nbytes) {
      const off_t at = cb.aio_offset + static_cast<off_t>(done);
      const ssize_t r = write ? pwrite(fd_, buf + done, cb.aio_nbytes - done, at)
                              : pread(fd_, buf + done, cb.aio_nbytes - done, at);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) err = errno;
      else if (r == 0) err = write ? ENOSPC : EIO;  // a preallocated file has no early end
      else done += static_cast<size_t>(r);
    }
    busy_[ticket] = false;
    if (err != 0 && report) fail(write ? "writing" : "reading", err);
  }

  std::shared_ptr<NvmeDirectory> dir_;
  std::string path_;
  size_t bytes_;
  int fd_ = -1;
  std::vector<std::unique_ptr<aiocb>> slots_;  // stable addresses while in flight
  std::vector<bool> busy_, writes_, submitted_;
};

}  // namespace

std::unique_ptr<OffloadStore> make_offload_store(const OffloadConfig& o, const std::string& key,
                                                 std::shared_ptr<NvmeDirectory>& dir_group,
                                                 int rank, const std::string& name, size_t bytes,
                                                 MemCategory cat, Ops& ops) {
  if (o.device == "cpu")
    return std::unique_ptr<OffloadStore>(
        new HostStore(ops.services(), bytes, cat, o.pin_memory && ops.on_device()));
  if (o.device != "nvme")
    throw std::logic_error("offload store: device '" + o.device + "' is not cpu or nvme");
  if (!dir_group) dir_group = std::make_shared<NvmeDirectory>(o.nvme_path, key, rank);
  return std::unique_ptr<OffloadStore>(new FileStore(dir_group, name, bytes, cat));
}

StoreUploader::~StoreUploader() {
  try {
    forget_read_ahead();
  } catch (...) {  // a failed read: its buffer is still released below
  }
  for (auto& kv : ahead_) services_.release_host(kv.second.buffer);
  services_.release_host(staging_);
}

void StoreUploader::finish(Ahead& a) {
  if (a.ticket < 0) return;
  const int t = a.ticket;
  a.ticket = -1;
  store_.wait(t);
}

void StoreUploader::read_ahead(const Range& r) {
  if (store_.host_data() || r.n == 0 || ahead_.count(r.off) || ahead_.size() >= max_ahead_) return;
  char* buffer = static_cast<char*>(services_.alloc_host(r.n, MemCategory::CommBuffers, pinned_));
  try {
    ahead_[r.off] = {r.n, buffer, store_.start_read(r.off, r.n, buffer)};
  } catch (...) {
    services_.release_host(buffer);
    throw;
  }
}

void StoreUploader::forget_read_ahead() {
  while (!ahead_.empty()) {
    Ahead a = ahead_.begin()->second;
    ahead_.erase(ahead_.begin());
    try {
      finish(a);
    } catch (...) {
      services_.release_host(a.buffer);
      throw;
    }
    services_.release_host(a.buffer);
  }
}

void StoreUploader::upload(const std::vector<Range>& ranges, void* dst) {
  char* out = static_cast<char*>(dst);
  uint64_t last = 0;
  size_t total = 0;
  if (char* host = store_.host_data()) {
    for (const Range& r : ranges) {
      last = services_.from_host_async(out + total, host + r.off, r.n);
      total += r.n;
    }
    services_.wait_copy(last);
    return;
  }
  // Ranges read ahead come from their buffers; the others are read now, all
  // at once, into the staging buffer.
  std::vector<const Ahead*> from(ranges.size(), nullptr);
  size_t staged = 0;
  for (size_t i = 0; i < ranges.size(); i++) {
    auto it = ahead_.find(ranges[i].off);
    if (it != ahead_.end() && it->second.n == ranges[i].n) from[i] = &it->second;
    else staged += ranges[i].n;
  }
  if (staged > capacity_) {
    services_.release_host(staging_);
    staging_ = nullptr;
    capacity_ = 0;
    staging_ = static_cast<char*>(services_.alloc_host(staged, MemCategory::CommBuffers, pinned_));
    capacity_ = staged;
  }
  std::vector<int> reads;
  size_t at = 0;
  try {
    for (size_t i = 0; i < ranges.size(); i++) {
      if (from[i]) continue;
      reads.push_back(store_.start_read(ranges[i].off, ranges[i].n, staging_ + at));
      at += ranges[i].n;
    }
    for (size_t i = 0; i < reads.size(); i++) {
      const int ticket = reads[i];
      reads[i] = -1;
      store_.wait(ticket);
    }
    for (size_t i = 0; i < ranges.size(); i++)
      if (from[i]) finish(ahead_.at(ranges[i].off));
  } catch (...) {
    for (int t : reads)  // leave no read in flight into the staging buffer
      if (t >= 0) {
        try {
          store_.wait(t);
        } catch (...) {
        }
      }
    throw;
  }
  at = 0;
  for (size_t i = 0; i < ranges.size(); i++) {
    const char* src = from[i] ? from[i]->buffer : staging_ + at;
    if (!from[i]) at += ranges[i].n;
    last = services_.from_host_async(out + total, src, ranges[i].n);
    total += ranges[i].n;
  }
  services_.wait_copy(last);
  for (size_t i = 0; i < ranges.size(); i++) {
    if (!from[i]) continue;
    read_ahead_bytes_ += ranges[i].n;
    services_.release_host(from[i]->buffer);
    ahead_.erase(ranges[i].off);
  }
}

std::string nvme_path_problem(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    return "'" + path + "': " + errno_text(errno) + " (expected an existing directory)";
  if (!S_ISDIR(st.st_mode)) return "'" + path + "' is not a directory";
  if (access(path.c_str(), W_OK | X_OK) != 0)
    return "'" + path + "' is not writable: " + errno_text(errno);
  return "";
}

MemoryLedger& nvme_ledger() {
  static MemoryLedger ledger;
  return ledger;
}

}  // namespace zt
