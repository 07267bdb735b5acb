#include "train/commands/report_plots.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

extern char** environ;

namespace zt {

namespace fs = std::filesystem;

const char* const kPlotPython = "/usr/bin/python3";

int run_program(const std::vector<std::string>& argv, bool quiet) {
  std::vector<char*> cargv;
  for (const std::string& s : argv) cargv.push_back(const_cast<char*>(s.c_str()));
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  }
  pid_t pid = 0;
  const int err = posix_spawn(&pid, cargv[0], &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

std::string find_project_file(const std::string& relative) {
  const fs::path rel(relative);
  if (fs::exists(rel)) return rel.string();
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path beside = exe.parent_path().parent_path() / rel;
    if (fs::exists(beside)) return beside.string();
  }
  return "";
}

std::string plots_unavailable(bool plots_wanted, const std::string& script_file,
                              std::string* script) {
  if (!plots_wanted) return "--no-plots was given";
  if (access(kPlotPython, X_OK) != 0) return std::string(kPlotPython) + " not found";
  if (run_program({kPlotPython, "-c", "import matplotlib"}, true) != 0)
    return std::string(kPlotPython) + " has no matplotlib (`import matplotlib` failed)";
  *script = find_project_file("scripts/" + script_file);
  if (script->empty())
    return "scripts/" + script_file +
           " not found (looked under the current directory and beside the binary)";
  return "";
}

}  // namespace zt
