#include "data/input/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "data/shard.h"

namespace zt {

std::string file_type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a named pipe (FIFO)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISREG(mode)) return "a regular file";
  return "not a regular file";
}

std::string input_path_problem(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return kInputAbsent;
    if (errno == ELOOP) return "is a symbolic link loop";
    return std::string("cannot be examined: ") + std::strerror(errno);
  }
  if (!S_ISREG(st.st_mode)) return "is " + file_type_name(st.st_mode) + ", expected a regular file";
  if (::access(path.c_str(), R_OK) != 0)
    return std::string("cannot be opened: ") + std::strerror(errno);
  return "";
}

InputFile::InputFile(const std::string& path, const std::string& what) : path_(path), what_(what) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0)
    throw DataError(path + ": cannot open " + what + ": " +
                    (errno == ELOOP ? "it is a symbolic link loop" : std::strerror(errno)));
  struct stat st;
  if (::fstat(fd_, &st) != 0) {
    const std::string reason = std::strerror(errno);
    ::close(fd_);
    throw DataError(path + ": cannot stat " + what + ": " + reason);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw DataError(path + ": cannot read " + what + ": it is " + file_type_name(st.st_mode) +
                    ", expected a regular file");
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void InputFile::read_at(uint64_t offset, void* dst, size_t n) const {
  if (offset > size_ || n > size_ - offset)
    throw DataError(path_ + ": truncated " + what_ + ": needs bytes [" + std::to_string(offset) +
                    ", " + std::to_string(offset + n) + ") but the file has " +
                    std::to_string(size_));
  char* p = static_cast<char*>(dst);
  while (n > 0) {
    const ssize_t got = ::pread(fd_, p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw DataError(path_ + ": cannot read " + what_ + ": " + std::strerror(errno));
    if (got == 0)
      throw DataError(path_ + ": " + what_ + " shrank while being read (at byte " +
                      std::to_string(offset) + ")");
    p += got;
    offset += static_cast<uint64_t>(got);
    n -= static_cast<size_t>(got);
  }
}

std::string InputFile::read_all(uint64_t max_bytes) const {
  if (size_ > max_bytes)
    throw DataError(path_ + ": " + what_ + " is " + std::to_string(size_) +
                    " bytes, more than the limit of " + std::to_string(max_bytes));
  std::string bytes(static_cast<size_t>(size_), '\0');
  read_at(0, bytes.data(), bytes.size());
  return bytes;
}

std::string read_small_file(const std::string& path, const std::string& what, uint64_t max_bytes) {
  return InputFile(path, what).read_all(max_bytes);
}

}  // namespace zt
