// Shard I/O. Bytes are assembled and split explicitly so the files are
// little-endian whatever the host is, and reads and writes go in chunks so a
// shard of 10^8 tokens never needs a second full-size buffer.
#include "data/shard.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>

#include "data/input/input_file.h"

namespace zt {
namespace {

constexpr size_t kChunkTokens = size_t(1) << 20;

std::string errno_text() { return std::strerror(errno); }

void put_le32(uint8_t* p, uint32_t v) {
  for (int b = 0; b < 4; ++b) p[b] = uint8_t(v >> (8 * b));
}

uint32_t get_le32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

// Closes the descriptor on every exit path.
struct FileDescriptor {
  int fd = -1;
  explicit FileDescriptor(int f) : fd(f) {}
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
};

bool write_all(int fd, const uint8_t* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= size_t(w);
  }
  return true;
}

bool read_all(int fd, uint8_t* data, size_t n) {
  while (n > 0) {
    ssize_t r = ::read(fd, data, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    data += r;
    n -= size_t(r);
  }
  return true;
}

std::string parent_dir(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Makes the rename itself durable; a failure here loses nothing already
// visible, so it is not an error.
void sync_dir(const std::string& dir) {
  FileDescriptor d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY));
  if (d.fd >= 0) ::fsync(d.fd);
}

}  // namespace

void write_shard(const std::string& path, const std::vector<uint32_t>& tokens, bool wide) {
  if (tokens.empty())
    throw DataError(path + ": refusing to write an empty shard (token count must be > 0)");
  if (tokens.size() > size_t(INT32_MAX))
    throw DataError(path + ": " + std::to_string(tokens.size()) +
                    " tokens exceed the int32 header count; split into more shards");
  if (!wide) {
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] > 0xFFFF)
        throw DataError(path + ": token " + std::to_string(tokens[i]) + " at index " +
                        std::to_string(i) +
                        " does not fit a uint16 shard; write a wide (uint32) shard");
  }

  std::string tmp = path + ".tmp.XXXXXX";
  int raw_fd = ::mkstemp(&tmp[0]);
  if (raw_fd < 0)
    throw DataError(path + ": cannot create a temporary file next to it (" + errno_text() + ")");
  FileDescriptor fd(raw_fd);
  auto fail = [&](const std::string& what) {
    std::string reason = errno_text();
    ::unlink(tmp.c_str());
    throw DataError(path + ": " + what + " (" + reason + ")");
  };
  // mkstemp creates 0600; shards are ordinary data files.
  if (::fchmod(fd.fd, 0644) != 0) fail("cannot set permissions");

  uint8_t header[kShardHeaderBytes] = {};
  put_le32(header + 0, uint32_t(wide ? kShardMagicU32 : kShardMagicU16));
  put_le32(header + 4, uint32_t(wide ? kShardVersionU32 : kShardVersionU16));
  put_le32(header + 8, uint32_t(tokens.size()));
  if (!write_all(fd.fd, header, sizeof header)) fail("write failed");

  const size_t width = wide ? 4 : 2;
  std::vector<uint8_t> buffer(std::min(tokens.size(), kChunkTokens) * width);
  for (size_t start = 0; start < tokens.size(); start += kChunkTokens) {
    size_t n = std::min(kChunkTokens, tokens.size() - start);
    for (size_t i = 0; i < n; ++i) {
      uint32_t v = tokens[start + i];
      uint8_t* p = buffer.data() + i * width;
      for (size_t b = 0; b < width; ++b) p[b] = uint8_t(v >> (8 * b));
    }
    if (!write_all(fd.fd, buffer.data(), n * width)) fail("write failed");
  }
  if (::fsync(fd.fd) != 0) fail("fsync failed");
  if (::close(fd.fd) != 0) {
    fd.fd = -1;
    fail("close failed");
  }
  fd.fd = -1;
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("cannot rename the temporary file into place");
  sync_dir(parent_dir(path));
}

std::vector<uint32_t> read_shard(const std::string& path, int vocab_size) {
  if (vocab_size <= 0)
    throw DataError(path + ": cannot validate tokens against a non-positive vocab_size " +
                    std::to_string(vocab_size));
  // O_NONBLOCK: a named pipe is refused below instead of waiting for a writer.
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK));
  if (fd.fd < 0) {
    if (errno == ENOENT) throw DataError(path + ": no such file");
    throw DataError(path + ": cannot open for reading (" + errno_text() + ")");
  }
  struct stat st;
  if (::fstat(fd.fd, &st) != 0) throw DataError(path + ": cannot stat (" + errno_text() + ")");
  if (!S_ISREG(st.st_mode))
    throw DataError(path + ": cannot read token shard: it is " + file_type_name(st.st_mode) +
                    ", expected a regular file");
  const int64_t file_bytes = int64_t(st.st_size);
  if (file_bytes == 0)
    throw DataError(path + ": file is empty (0 bytes); a token shard needs a " +
                    std::to_string(kShardHeaderBytes) + "-byte header followed by tokens");
  if (file_bytes < kShardHeaderBytes)
    throw DataError(path + ": file is " + std::to_string(file_bytes) + " bytes, shorter than the " +
                    std::to_string(kShardHeaderBytes) + "-byte shard header");

  uint8_t header[kShardHeaderBytes];
  if (!read_all(fd.fd, header, sizeof header))
    throw DataError(path + ": cannot read the header (" + errno_text() + ")");
  const int32_t magic = int32_t(get_le32(header + 0));
  const int32_t version = int32_t(get_le32(header + 4));
  const int32_t count = int32_t(get_le32(header + 8));
  if (magic != kShardMagicU16 && magic != kShardMagicU32)
    throw DataError(path + ": bad magic number " + std::to_string(magic) + ", expected " +
                    std::to_string(kShardMagicU16) + " (uint16 tokens) or " +
                    std::to_string(kShardMagicU32) + " (uint32 tokens); not an llm.c token shard");
  const bool wide = magic == kShardMagicU32;
  const int32_t expected_version = wide ? kShardVersionU32 : kShardVersionU16;
  if (version != expected_version)
    throw DataError(path + ": unsupported version " + std::to_string(version) + " for magic " +
                    std::to_string(magic) + ", expected version " +
                    std::to_string(expected_version));
  if (count <= 0)
    throw DataError(path + ": header token count is " + std::to_string(count) + ", expected > 0");
  const int64_t width = wide ? 4 : 2;
  const int64_t expected_bytes = kShardHeaderBytes + int64_t(count) * width;
  if (file_bytes != expected_bytes)
    throw DataError(path + ": size mismatch: expected " + std::to_string(expected_bytes) +
                    " bytes (" + std::to_string(kShardHeaderBytes) + "-byte header + " +
                    std::to_string(count) + " tokens x " + std::to_string(width) +
                    " bytes), actual " + std::to_string(file_bytes) + " bytes");

  std::vector<uint32_t> tokens(static_cast<size_t>(count));
  std::vector<uint8_t> buffer(std::min(size_t(count), kChunkTokens) * size_t(width));
  for (size_t start = 0; start < tokens.size(); start += kChunkTokens) {
    size_t n = std::min(kChunkTokens, tokens.size() - start);
    if (!read_all(fd.fd, buffer.data(), n * size_t(width)))
      throw DataError(path + ": read failed at token " + std::to_string(start) + " (" +
                      errno_text() + ")");
    for (size_t i = 0; i < n; ++i) {
      const uint8_t* p = buffer.data() + i * size_t(width);
      uint32_t v = wide ? get_le32(p) : uint32_t(p[0]) | uint32_t(p[1]) << 8;
      if (v >= uint32_t(vocab_size)) {
        size_t index = start + i;
        throw DataError(path + ": token " + std::to_string(v) + " at index " +
                        std::to_string(index) + " (byte offset " +
                        std::to_string(kShardHeaderBytes + int64_t(index) * width) +
                        ") is out of range for model.vocab_size " + std::to_string(vocab_size));
      }
      tokens[start + i] = v;
    }
  }
  return tokens;
}

std::vector<std::string> expand_glob(const std::string& pattern_or_file) {
  if (pattern_or_file.empty()) throw DataError("data file list: empty file name or glob");
  glob_t matches;
  int rc = ::glob(pattern_or_file.c_str(), 0, nullptr, &matches);
  std::vector<std::string> files;
  if (rc == 0)
    for (size_t i = 0; i < matches.gl_pathc; ++i) files.emplace_back(matches.gl_pathv[i]);
  ::globfree(&matches);
  if (rc != 0 && rc != GLOB_NOMATCH)
    throw DataError(pattern_or_file + ": glob expansion failed (read error or out of memory)");
  if (files.empty()) {
    bool is_pattern = pattern_or_file.find_first_of("*?[") != std::string::npos;
    throw DataError(pattern_or_file + (is_pattern ? ": glob matches no files" : ": no such file"));
  }
  // glob(3) orders by the locale's collation; bytewise order keeps shard order
  // (and so the token stream) identical on every machine.
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace zt
