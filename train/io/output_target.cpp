#include "train/io/output_target.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "data/input/input_file.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

std::string parent_of(const std::string& path) {
  const std::string parent = fs::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

// "" when dir is a directory this process may create entries in.
std::string writable_dir_problem(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return dir + ": " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return dir + " is " + file_type_name(st.st_mode) + ", not a directory";
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return "cannot write in " + dir + ": " + std::strerror(errno);
  return "";
}

}  // namespace

std::string output_file_problem(const std::string& path) {
  if (path.empty()) return "an empty path";
  struct stat st;
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode))
    return "it is " + file_type_name(st.st_mode) + ", expected a file to write";
  if (!exists && errno == ELOOP) return "a symbolic link loop";
  const std::string parent = parent_of(path);
  struct stat pst;
  if (::stat(parent.c_str(), &pst) != 0) return "its directory " + parent + " does not exist";
  return writable_dir_problem(parent);
}

std::string output_dir_problem(const std::string& path) {
  if (path.empty()) return "an empty path";
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode))
      return "it is " + file_type_name(st.st_mode) + ", expected a directory";
    return writable_dir_problem(path);
  }
  if (errno == ELOOP) return "a symbolic link loop";
  // Absent: it will be created below its nearest existing ancestor.
  std::string ancestor = parent_of(path);
  while (::stat(ancestor.c_str(), &st) != 0) {
    if (errno != ENOENT) return ancestor + ": " + std::strerror(errno);
    const std::string up = parent_of(ancestor);
    if (up == ancestor) break;
    ancestor = up;
  }
  return writable_dir_problem(ancestor);
}

}  // namespace zt
