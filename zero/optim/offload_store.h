// Arrays kept off the device for ZeRO-Offload / ZeRO-Infinity: in host memory
// (device: cpu) or in a file under an NVMe path (device: nvme), transferred by
// byte range to and from host buffers. File transfers are POSIX aio (glibc's,
// no extra library: the GPU machine cannot install liburing), so several chunk
// reads and writes are in flight while the caller computes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/device_services.h"
#include "model/memory_ledger.h"
#include "model/ops.h"
#include "zero/zero_config.h"

namespace zt {

class OffloadStore {
 public:
  virtual ~OffloadStore() = default;
  // The whole array, for a host store; null for a file store.
  virtual char* host_data() = 0;
  // Start a transfer between [off, off + n) of the array and host memory; the
  // host buffer must stay put until wait(ticket) returns.
  virtual int start_read(size_t off, size_t n, void* dst) = 0;
  virtual int start_write(size_t off, size_t n, const void* src) = 0;
  virtual void wait(int ticket) = 0;
  void read(size_t off, size_t n, void* dst) { wait(start_read(off, n, dst)); }
  void write(size_t off, size_t n, const void* src) { wait(start_write(off, n, src)); }
};

// One store of `bytes` bytes as `o.device` says (cpu or nvme). `key` is the
// config block errors name (zero.offload_optimizer); the file stores of one
// `dir_group` share one directory, made under o.nvme_path with a unique name
// per run and rank and removed with its files when the last store goes.
class NvmeDirectory;
std::unique_ptr<OffloadStore> make_offload_store(const OffloadConfig& o, const std::string& key,
                                                 std::shared_ptr<NvmeDirectory>& dir_group,
                                                 int rank, const std::string& name, size_t bytes,
                                                 MemCategory cat, Ops& ops);

// Byte ranges of a store, one after another, into backend memory (a stage-3
// gather's send buffer), every transfer of a call in flight at once: a host
// store's ranges go up directly, a file store's are read into one reused
// staging buffer (page-locked when `pinned`) and go up in one copy. upload
// returns when dst holds them all. A file store's ranges can be read ahead
// (read_ahead: each into a buffer of its own, at most `max_ahead` at once, in
// flight until an upload takes it); forget_read_ahead drops them all, as the
// store is about to change.
class StoreUploader {
 public:
  struct Range {
    size_t off, n;
  };
  StoreUploader(OffloadStore& store, DeviceServices& services, bool pinned, size_t max_ahead)
      : store_(store), services_(services), pinned_(pinned), max_ahead_(max_ahead) {}
  ~StoreUploader();
  StoreUploader(const StoreUploader&) = delete;
  StoreUploader& operator=(const StoreUploader&) = delete;
  void upload(const std::vector<Range>& ranges, void* dst);
  // No-op for a host store, a range already read ahead, or max_ahead in flight.
  void read_ahead(const Range& r);
  void forget_read_ahead();
  uint64_t read_ahead_bytes() const { return read_ahead_bytes_; }  // bytes uploads took from it

 private:
  struct Ahead {
    size_t n;
    char* buffer;
    int ticket;  // -1 once waited for
  };
  void finish(Ahead& a);
  OffloadStore& store_;
  DeviceServices& services_;
  bool pinned_;
  size_t max_ahead_;
  char* staging_ = nullptr;
  size_t capacity_ = 0;
  std::map<size_t, Ahead> ahead_;  // by store offset
  uint64_t read_ahead_bytes_ = 0;
};

// "" when `path` is an existing, writable directory; otherwise why not.
std::string nvme_path_problem(const std::string& path);

// Bytes of live offload files by category, process-wide (summary.json's memory.nvme).
MemoryLedger& nvme_ledger();

}  // namespace zt
