#include "train/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace zt {
namespace {

std::string parent_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Writes all n bytes or returns false with errno set (0 for a zero-length write).
bool write_fully(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = ENOSPC;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

void fsync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

AtomicFile::AtomicFile(const std::string& path) : path_(path), tmp_(path + ".tmp.XXXXXX") {
  fd_ = ::mkstemp(&tmp_[0]);
  if (fd_ < 0) {
    tmp_.clear();
    fail("cannot create a temporary file beside it");
  }
  if (::fchmod(fd_, 0644) != 0) fail("cannot set permissions");
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

void AtomicFile::fail(const std::string& what) {
  const std::string reason = std::strerror(errno);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  tmp_.clear();
  throw IoError(path_ + ": " + what + ": " + reason);
}

void AtomicFile::write(const void* data, size_t n) {
  if (fd_ < 0) throw IoError(path_ + ": write after commit");
  if (!write_fully(fd_, static_cast<const char*>(data), n)) fail("cannot write");
  written_ += n;
}

void AtomicFile::commit() {
  if (fd_ < 0) throw IoError(path_ + ": committed twice");
  if (::fsync(fd_) != 0) fail("cannot write (fsync)");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("cannot write (close)");
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0)
    fail("cannot rename the finished file into place");
  tmp_.clear();
  fsync_dir(parent_of(path_));
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  AtomicFile f(path);
  f.write(bytes);
  f.commit();
}

AppendFile::AppendFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw IoError(path + ": cannot open for writing: " + std::strerror(errno));
  struct stat st;
  std::string problem;
  if (::fstat(fd_, &st) != 0) problem = std::strerror(errno);
  else if (!S_ISREG(st.st_mode)) problem = "not a regular file";
  if (!problem.empty()) {
    ::close(fd_);
    throw IoError(path + ": cannot open for writing: " + problem);
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

AppendFile::~AppendFile() {
  if (fd_ >= 0) ::close(fd_);
}

void AppendFile::append_line(const std::string& line) {
  const std::string whole = line + "\n";
  if (!write_fully(fd_, whole.data(), whole.size())) {
    const std::string reason = std::strerror(errno);
    // A short write may have left part of the line: cut it off so the log stays whole.
    const bool cut = ::ftruncate(fd_, static_cast<off_t>(size_)) == 0;
    throw IoError(path_ + ": cannot write: " + reason +
                  (cut ? "" : " (and the partial line could not be removed)"));
  }
  size_ += whole.size();
}

}  // namespace zt
