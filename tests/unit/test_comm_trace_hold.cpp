// The comm trace of the calls issued before its file is opened: the trainer
// holds them (DeepSpeed's start-up, the checkpoint load come before the run
// directory may be written) and open_trace writes them first.
#include <string>
#include <vector>

#include "model/ops.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "zero/comm/comm_stats.h"
#include "zero/comm/communicators.h"

namespace zt {
namespace {

std::vector<std::string> trace_lines(const std::string& path) {
  std::vector<std::string> lines;
  std::string text = read_file(path), line;
  for (char c : text) {
    if (c == '\n') {
      lines.push_back(line);
      line.clear();
    } else {
      line += c;
    }
  }
  return lines;
}

// One broadcast of 3 fp32 elements at step -1 in the init phase, then one
// all-reduce of 5 at step 0 after the file is opened.
std::vector<std::string> traced(bool hold) {
  TestDir dir;
  {
    auto ops = make_cpu_ops();
    CountingCommunicator comm(make_single_communicator(*ops));
    if (hold) comm.hold_trace();
    std::vector<float> buf(5, 1.0f);
    comm.set_step(-1);
    comm.annotate(Phase::Init, 0);
    comm.broadcast(buf.data(), 3, DType::F32, 0)->wait();
    comm.open_trace(dir.file("trace.jsonl"));
    comm.set_step(0);
    comm.annotate(Phase::Step, 0);
    comm.all_reduce(buf.data(), 5, DType::F32)->wait();
  }  // the communicator closes the file
  return trace_lines(dir.file("trace.jsonl"));
}

}  // namespace

TEST_CASE("the comm trace holds the calls before open_trace, and writes them first",
          "[comm_trace]") {
  const std::vector<std::string> held = traced(true);
  REQUIRE(held.size() == 2);
  CHECK(held[0].find("\"step\":-1,\"phase\":\"init\"") != std::string::npos);
  CHECK(held[0].find("\"op\":\"broadcast\",\"count\":3,\"dtype\":\"fp32\",\"bytes\":12,"
                     "\"root\":0") != std::string::npos);
  CHECK(held[1].find("\"step\":0,\"phase\":\"step\"") != std::string::npos);
  CHECK(held[1].find("\"op\":\"all_reduce\",\"count\":5") != std::string::npos);

  // Without hold_trace, what came before the file is not in it.
  const std::vector<std::string> plain = traced(false);
  REQUIRE(plain.size() == 1);
  CHECK(plain[0].find("\"op\":\"all_reduce\"") != std::string::npos);
}

}  // namespace zt
