// Checks an option that names an output (--out, --run-dir, export's OUT.bin)
// before any work starts, so that a wrong path costs a second, not a finished
// measurement: the target's kind (a directory where a file goes, a FIFO, a
// device) and whether its directory can be written. Writers still check every
// write; this only moves the common mistakes to the start.
#pragma once
#include <string>

namespace zt {

// "" when `path` can be written as a file (it is absent or a regular file, in
// a writable directory), else the problem in a few words: "it is a directory,
// expected a file to write", "its directory DIR does not exist".
std::string output_file_problem(const std::string& path);
// "" when `path` is a writable directory or can be created as one (its nearest
// existing ancestor is a writable directory), else the problem.
std::string output_dir_problem(const std::string& path);

}  // namespace zt
