// Writes that cannot fail silently or leave half a file behind.
//
// AtomicFile: a temporary file beside the target, every write checked, then
// fsync, rename over the target and fsync of the directory; a file that is not
// committed (an error, an exception) is removed. AppendFile: whole lines
// appended to a log; a line that cannot be written whole is cut back off, so
// the log always ends at a line boundary. Every error is an IoError of one
// line naming the target and the OS error ("RUN/metrics.jsonl: cannot write:
// No space left on device"). A file-size limit (RLIMIT_FSIZE) is an error like
// any other once SIGXFSZ is ignored, as main does.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace zt {

struct IoError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class AtomicFile {
 public:
  explicit AtomicFile(const std::string& path);
  ~AtomicFile();  // removes the temporary file unless committed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t n);
  void write(const std::string& s) { write(s.data(), s.size()); }
  uint64_t bytes_written() const { return written_; }
  // fsync, close, rename into place, fsync of the directory.
  void commit();

 private:
  [[noreturn]] void fail(const std::string& what);
  std::string path_, tmp_;
  int fd_ = -1;
  uint64_t written_ = 0;
};

// The whole of `bytes` as `path`, atomically.
void write_file_atomic(const std::string& path, const std::string& bytes);

class AppendFile {
 public:
  // Opens (creating) `path` for appending at its current end.
  explicit AppendFile(const std::string& path);
  ~AppendFile();
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;
  // Appends `line` and a newline, whole or not at all.
  void append_line(const std::string& line);

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Makes a rename or unlink inside `dir` durable; best effort.
void fsync_dir(const std::string& dir);

}  // namespace zt
