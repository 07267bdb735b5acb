// The files a directory holds, for commands that take a folder of inputs
// (`prepare --input DIR`). A tree is walked by hand rather than with
// std::filesystem's recursive iterator, which follows a symbolic link back to
// an ancestor until the path is too long and lists a file once per link.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace zt {

// The regular files under `root`, sorted bytewise by path: names starting
// with '.' skipped; symbolic links followed, but each directory entered once
// (a link back to an ancestor adds nothing) and each file listed once, under
// the first path the walk reaches (depth first, names sorted). A named pipe, device or
// socket in the tree is a DataError naming it and its kind, as is a tree of
// more than max_files files or deeper than 256 levels.
std::vector<std::string> list_regular_files(const std::string& root, size_t max_files);

}  // namespace zt
