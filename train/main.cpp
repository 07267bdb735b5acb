// zerotrain: one binary, one subcommand per job. Every rank runs main; errors
// that every rank sees alike (config, data, usage) exit 2 with one line from
// rank 0, errors the ranks agreed on (a failed checkpoint write) exit 1 the
// same way; any other error on any rank takes the whole job down.
#include <mpi.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "data/shard.h"
#include "train/commands.h"
#include "train/config.h"
#include "train/runtime.h"
#include "train/trainer.h"

namespace {

const char* kUsage =
    "usage: zerotrain COMMAND ...\n"
    "  train CONFIG [--set k=v ...] [--run-dir DIR] [--resume] [--init-from F] [--deepspeed J]\n"
    "  prepare --input FILE|DIR|GLOB --out DIR --tokenizer byte|bpe|gpt2|FILE.tiktoken\n"
    "          [--vocab N] [--documents file|paragraphs] [--threads N] [--val-fraction F]\n"
    "          [--shard-tokens N]\n"
    "  eval CONFIG [--init-from F | --checkpoint CKPT] [--batches N] [--set k=v ...]\n"
    "  sample --checkpoint CKPT [--prompt TEXT] [--tokens N] [--temperature X] [--top-k K]\n"
    "          [--seed S]\n"
    "  export --checkpoint CKPT --format llmc OUT.bin\n"
    "  plan CONFIG --world W [--ranks-per-node G] [--set k=v ...] [--deepspeed DS.json]\n"
    "          [--calls] [--network NET.json (--compute-from SUMMARY.json | --compute-ms M,O)]\n"
    "  explain DS_CONFIG.json --world W [--ranks-per-node G] [--config CONFIG | --model NAME]\n"
    "          [--set k=v ...]\n"
    "  report RUNS_DIR [--out DIR] [--no-plots]\n"
    "  tokenize --tokenizer byte|gpt2|FILE.tiktoken|MODEL.model [--decode] [--eot] [--pieces]\n"
    "  commbench [--primitives LIST|all] [--dtype fp32,bf16|all] [--min-bytes N] [--max-bytes N]\n"
    "          [--warmup N] [--iters N] [--max-seconds S] [--root R] [--seed S]\n"
    "          [--device auto|cpu|cuda] [--communicator auto|mpi|nccl] [--host]\n"
    "          [--host-nvme DIR] [--out FILE.json]\n";

int dispatch(const std::string& cmd, const std::vector<std::string>& args) {
  if (cmd == "train") return zt::run_train(zt::parse_train_args(args));
  if (cmd == "prepare") return zt::run_prepare_command(args);
  if (cmd == "eval") return zt::run_eval_command(args);
  if (cmd == "sample") return zt::run_sample_command(args);
  if (cmd == "export") return zt::run_export_command(args);
  if (cmd == "plan") return zt::run_plan_command(args);
  if (cmd == "explain") return zt::run_explain_command(args);
  if (cmd == "report") return zt::run_report_command(args);
  if (cmd == "tokenize") return zt::run_tokenize_command(args);
  if (cmd == "commbench") return zt::run_commbench_command(args);
  std::fprintf(stderr, "zerotrain: unknown command '%s'\n%s", cmd.c_str(), kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  // A file-size limit (ulimit -f) then fails the write with EFBIG, which every
  // writer reports as a failed write naming the file, instead of killing us.
  std::signal(SIGXFSZ, SIG_IGN);
  // Threads: the MPI communicator's progress thread calls MPI beside the main one.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::string cmd = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  // What was printed goes out before the error line.
  auto report = [rank](const char* what) {
    std::fflush(stdout);
    if (rank == 0) std::fprintf(stderr, "zerotrain: %s\n", what);
  };
  int rc = 0;
  try {
    rc = dispatch(cmd, args);
  } catch (const zt::ConfigError& e) {
    report(e.what());
    rc = 2;
  } catch (const zt::DataError& e) {
    report(e.what());
    rc = 2;
  } catch (const zt::JobError& e) {
    report(e.what());
    rc = 1;
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
