#include "data/shard_writer.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>

#include "data/shard.h"

namespace zt {

namespace fs = std::filesystem;

ShardWriter::ShardWriter(std::string dir, std::string prefix, int64_t shard_tokens, bool wide)
    : dir_(std::move(dir)), prefix_(std::move(prefix)), shard_tokens_(size_t(shard_tokens)),
      wide_(wide) {}

std::vector<std::pair<std::string, int64_t>> ShardWriter::finish() {
  if (!buffer_.empty()) flush();
  const int digits =
      std::max<int>(3, int(std::to_string(counts_.empty() ? 0 : counts_.size() - 1).size()));
  std::vector<std::pair<std::string, int64_t>> shards;
  for (size_t i = 0; i < counts_.size(); ++i) {
    std::string name = shard_name(i, digits);
    if (digits != 3) fs::rename(dir_ + "/" + shard_name(i, 3), dir_ + "/" + name);
    shards.emplace_back(name, counts_[i]);
  }
  return shards;
}

std::string ShardWriter::shard_name(size_t index, int digits) const {
  std::string number = std::to_string(index);
  return prefix_ + "_" + std::string(size_t(std::max<int>(0, digits - int(number.size()))), '0') +
         number + ".bin";
}

void ShardWriter::flush() {
  write_shard(dir_ + "/" + shard_name(counts_.size(), 3), buffer_, wide_);
  counts_.push_back(int64_t(buffer_.size()));
  total_ += int64_t(buffer_.size());
  buffer_.clear();
}

WorkDirectory::WorkDirectory(const std::string& out) : out_(out) {
  std::error_code ec;
  if (fs::exists(out, ec) && !(fs::is_directory(out, ec) && fs::is_empty(out, ec)))
    throw DataError(out + ": already exists; remove it or choose another --out");
  fs::path parent = fs::path(out).parent_path();
  if (parent.empty()) parent = ".";
  fs::create_directories(parent, ec);
  std::string pattern =
      (parent / ("." + fs::path(out).filename().string() + ".tmp.XXXXXX")).string();
  if (!::mkdtemp(&pattern[0]))
    throw DataError(out + ": cannot create a temporary directory next to it");
  path_ = pattern;
  fs::permissions(path_, fs::perms(0755), ec);  // mkdtemp's 0700 would hide the data from others
}

WorkDirectory::~WorkDirectory() {
  if (path_.empty()) return;
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

void WorkDirectory::commit() {
  std::error_code ec;
  if (fs::exists(out_, ec)) fs::remove(out_, ec);  // the empty directory the constructor allowed
  fs::rename(path_, out_, ec);
  if (ec) throw DataError(out_ + ": cannot rename " + path_ + " into place: " + ec.message());
  path_.clear();
}

}  // namespace zt
