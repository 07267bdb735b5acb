// zerotrain: one binary, one subcommand per job. Every rank runs main; errors
// that every rank sees alike (config, data, usage) exit 2 with one line from
// rank 0, errors the ranks agreed on (a failed checkpoint write) exit 1 the
// same way; any other error on any rank takes the whole job down.
#include <mpi.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>
#include <string>
#include <vector>

#include "data/shard.h"
#include "train/cli/command_registry.h"
#include "train/config/config.h"
#include "train/loop/runtime.h"

namespace {

// Answers what needs no MPI: the overview, a command's help and an unknown
// command. Returns the exit status, or -1 to run the command.
int answer_without_mpi(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::fputs(zt::commands_overview().c_str(), argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const zt::Command* command = zt::find_command(argv[1]);
  if (!command) {
    std::string names;
    for (const zt::Command& c : zt::commands())
      names += (names.empty() ? "" : ", ") + c.cli.command;
    std::fprintf(stderr, "zerotrain: unknown command '%s' (commands: %s; zerotrain --help)\n",
                 argv[1], names.c_str());
    return 2;
  }
  if (zt::asks_for_help(command->cli, std::vector<std::string>(argv + 2, argv + argc))) {
    std::fputs(zt::command_help(*command).c_str(), stdout);
    return 0;
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (const int rc = answer_without_mpi(argc, argv); rc >= 0) return rc;
  // A file-size limit (ulimit -f) then fails the write with EFBIG, which every
  // writer reports as a failed write naming the file, instead of killing us.
  std::signal(SIGXFSZ, SIG_IGN);
  // Threads: the MPI communicator's progress thread calls MPI beside the main one.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const zt::Command& command = *zt::find_command(argv[1]);
  const std::string cmd = command.cli.command;
  // What was printed goes out before the error line.
  auto report = [rank](const char* what) {
    std::fflush(stdout);
    if (rank == 0) std::fprintf(stderr, "zerotrain: %s\n", what);
  };
  int rc = 0;
  try {
    rc = command.run(std::vector<std::string>(argv + 2, argv + argc));
  } catch (const zt::ConfigError& e) {
    report(e.what());
    rc = 2;
  } catch (const zt::DataError& e) {
    report(e.what());
    rc = 2;
  } catch (const zt::JobError& e) {
    report(e.what());
    rc = 1;
  } catch (const std::filesystem::filesystem_error& e) {
    // The path and the OS's reason, without the library's own wording.
    zt::abort_job(e.path1().string() + ": " + e.code().message());
  } catch (const std::bad_alloc&) {
    zt::abort_job("out of memory (std::bad_alloc) in '" + cmd + "'");
  } catch (const std::exception& e) {
    zt::abort_job(e.what());
  }
  std::fflush(stdout);
  std::fflush(stderr);
  MPI_Finalize();
  return rc;
}
