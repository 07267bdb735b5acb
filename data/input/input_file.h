// Reading files that come from outside: only regular files are read (a FIFO,
// device or directory is a one-line error, never a blocking open or an endless
// read), and every read is bounded by the file's real size, so no size field in
// a file can make a reader allocate more than the file holds.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>

namespace zt {

// "a directory", "a named pipe (FIFO)", "a character device", ... for st_mode.
std::string file_type_name(mode_t mode);

// "" when `path` names a regular file this process can open, else what it is
// instead: "does not exist", "is a directory, expected a regular file", "is a
// symbolic link loop", "cannot be opened: Permission denied". Opens nothing
// that could block (a FIFO is named, never opened).
std::string input_path_problem(const std::string& path);
inline const char* kInputAbsent = "does not exist";

// An open regular file. Every error is a DataError (data/shard.h) of one line,
// starting with the path; `what` names the kind of file ("config file").
class InputFile {
 public:
  InputFile(const std::string& path, const std::string& what);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }
  // Exactly n bytes from offset; a read past the end or a failed read is an error.
  void read_at(uint64_t offset, void* dst, size_t n) const;
  // The whole file; an error (naming the limit) when it holds more than max_bytes.
  std::string read_all(uint64_t max_bytes) const;

 private:
  std::string path_, what_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// The whole of a small regular file (config, metadata): at most max_bytes.
std::string read_small_file(const std::string& path, const std::string& what, uint64_t max_bytes);

}  // namespace zt
