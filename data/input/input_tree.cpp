#include "data/input/input_tree.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include "data/input/input_file.h"
#include "data/shard.h"

namespace zt {
namespace {

constexpr int kMaxDepth = 256;

using FileId = std::pair<dev_t, ino_t>;

struct TreeWalk {
  size_t max_files;
  std::set<FileId> seen_dirs, seen_files;
  std::vector<std::string> files;

  std::vector<std::string> entries(const std::string& dir) {
    DIR* d = ::opendir(dir.c_str());
    if (!d) throw DataError(dir + ": cannot list the directory: " + std::strerror(errno));
    std::vector<std::string> names;
    errno = 0;
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') names.emplace_back(e->d_name);
      errno = 0;
    }
    const int err = errno;
    ::closedir(d);
    if (err) throw DataError(dir + ": cannot list the directory: " + std::strerror(err));
    std::sort(names.begin(), names.end());
    return names;
  }

  void visit(const std::string& dir, int depth) {
    if (depth > kMaxDepth)
      throw DataError(dir + ": directories nested more than " + std::to_string(kMaxDepth) +
                      " deep");
    for (const std::string& name : entries(dir)) {
      const std::string path = dir + "/" + name;
      struct stat st;
      if (::stat(path.c_str(), &st) != 0) {
        if (errno == ELOOP) throw DataError(path + ": a symbolic link loop");
        if (errno == ENOENT) continue;  // a dangling link names nothing to read
        throw DataError(path + ": cannot examine: " + std::strerror(errno));
      }
      const FileId id{st.st_dev, st.st_ino};
      if (S_ISDIR(st.st_mode)) {
        if (seen_dirs.insert(id).second) visit(path, depth + 1);
      } else if (S_ISREG(st.st_mode)) {
        if (!seen_files.insert(id).second) continue;
        if (files.size() == max_files)
          throw DataError(path + ": more than " + std::to_string(max_files) +
                          " files under the input directory");
        files.push_back(path);
      } else {
        throw DataError(path + ": it is " + file_type_name(st.st_mode) +
                        ", expected a regular file or a directory");
      }
    }
  }
};

}  // namespace

std::vector<std::string> list_regular_files(const std::string& root, size_t max_files) {
  struct stat st;
  if (::stat(root.c_str(), &st) != 0)
    throw DataError(root + ": cannot examine: " + std::strerror(errno));
  TreeWalk walk{max_files, {}, {}, {}};
  walk.seen_dirs.insert({st.st_dev, st.st_ino});
  std::string dir = root;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  walk.visit(dir, 0);
  std::sort(walk.files.begin(), walk.files.end());
  return walk.files;
}

}  // namespace zt
