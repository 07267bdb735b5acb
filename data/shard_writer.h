// Writing a prepared corpus: shards of one split, and the hidden work
// directory that becomes the output directory only when everything is written.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace zt {

// Buffers one split's tokens and writes a shard each time shard_tokens are
// collected; finish() writes the rest and names the shards with enough digits
// (at least 3) that their sorted order is their numeric order.
class ShardWriter {
 public:
  ShardWriter(std::string dir, std::string prefix, int64_t shard_tokens, bool wide);

  void add(uint32_t token) {
    buffer_.push_back(token);
    if (buffer_.size() == shard_tokens_) flush();
  }
  void add(const std::vector<int>& ids) {
    for (int id : ids) add(uint32_t(id));
  }
  int64_t tokens() const { return total_; }

  // Returns the shards' file names (relative to dir) and token counts.
  std::vector<std::pair<std::string, int64_t>> finish();

 private:
  std::string shard_name(size_t index, int digits) const;
  void flush();

  std::string dir_, prefix_;
  size_t shard_tokens_;
  bool wide_;
  int64_t total_ = 0;
  std::vector<uint32_t> buffer_;
  std::vector<int64_t> counts_;
};

// A hidden directory next to `out` (".NAME.tmp.XXXXXX"), removed on
// destruction unless commit() renamed it to `out`. The constructor refuses an
// `out` that exists and is not an empty directory.
class WorkDirectory {
 public:
  explicit WorkDirectory(const std::string& out);
  ~WorkDirectory();
  WorkDirectory(const WorkDirectory&) = delete;
  WorkDirectory& operator=(const WorkDirectory&) = delete;

  const std::string& path() const { return path_; }
  void commit();

 private:
  std::string out_, path_;
};

}  // namespace zt
