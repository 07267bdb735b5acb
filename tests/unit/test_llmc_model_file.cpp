// llm.c's model file: fp32 (version 3) round trip through zerotrain's layout,
// bf16 (version 5) reading, and one-line errors for wrong files (shape, magic,
// size, not a regular file). Everything lives in one temporary directory that
// the test removes.
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "data/shard.h"
#include "model/host_floats.h"
#include "model/param_table.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "train/io/llmc_model_file.h"

namespace zt {
namespace {

GPTConfig small_shape() { return gpt_shape(2, 2, 16, 37, 9); }

std::string model_file_error(const std::string& path, const ParamTable& table) {
  return error_of<DataError>([&] { read_llmc_model(path, table); });
}

}  // namespace

TEST_CASE("llm.c model files: fp32 round trip, bf16 read, errors", "[llmc]") {
  const ParamTable table(small_shape());
  TestDir dir("zt_llmc");
  std::mt19937_64 rng(test_seed() + 0x11c);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> w(table.total());
  for (float& x : w) x = normal(rng);

  const std::string v3 = dir.file("model_v3.bin");
  write_llmc_model(v3, table, w);
  CHECK(read_llmc_model(v3, table) == w);

  // Version 5: the same header with bf16 tensors in the same order.
  FILE* in = std::fopen(v3.c_str(), "rb");
  REQUIRE(in);
  int32_t header[256];
  REQUIRE(std::fread(header, sizeof header, 1, in) == 1);
  std::vector<float> file_order(table.total());
  REQUIRE(std::fread(file_order.data(), sizeof(float), file_order.size(), in) == file_order.size());
  std::fclose(in);
  header[1] = 5;
  const std::string v5 = dir.file("model_v5.bin");
  FILE* out = std::fopen(v5.c_str(), "wb");
  REQUIRE(out);
  std::fwrite(header, sizeof header, 1, out);
  for (float x : file_order) {
    const uint16_t b = float_to_bf16(x);
    std::fwrite(&b, 2, 1, out);
  }
  std::fclose(out);
  const std::vector<float> from_bf16 = read_llmc_model(v5, table);
  for (size_t i = 0; i < w.size(); i++) REQUIRE(from_bf16[i] == bf16_to_float(float_to_bf16(w[i])));

  GPTConfig other = small_shape();
  other.n_layer = 3;
  const std::string shape_error = model_file_error(v3, ParamTable(other));
  CHECK(shape_error.find("model.n_layer is 2 in the file but 3 in the config") !=
        std::string::npos);
  header[0] = 1234;
  const std::string bad = dir.file("bad_magic.bin");
  out = std::fopen(bad.c_str(), "wb");
  std::fwrite(header, sizeof header, 1, out);
  std::fclose(out);
  CHECK(model_file_error(bad, table).find("bad magic 1234") != std::string::npos);
  CHECK(model_file_error("/nonexistent/model.bin", table).find("cannot open") != std::string::npos);

  // The size must be exactly what the header's shape needs, both ways.
  const std::string cut = dir.file("cut.bin");
  FILE* whole = std::fopen(v3.c_str(), "rb");
  std::vector<char> bytes(1024 + 4 * table.total());
  REQUIRE(std::fread(bytes.data(), 1, bytes.size(), whole) == bytes.size());
  std::fclose(whole);
  out = std::fopen(cut.c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size() - 4, out);
  std::fclose(out);
  CHECK(model_file_error(cut, table).find("bytes, but a version 3 file of this shape has") !=
        std::string::npos);
  out = std::fopen(cut.c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), out);
  std::fwrite("junk", 1, 4, out);
  std::fclose(out);
  CHECK(model_file_error(cut, table).find("bytes, but a version 3 file") != std::string::npos);

  // A FIFO, a device, a directory: refused at once, never read.
  HangGuard guard(120);
  REQUIRE(::mkfifo(dir.file("fifo.bin").c_str(), 0644) == 0);
  CHECK(model_file_error(dir.file("fifo.bin"), table).find("named pipe") != std::string::npos);
  CHECK(model_file_error("/dev/zero", table).find("character device") != std::string::npos);
  CHECK(model_file_error(dir.path, table).find("a directory") != std::string::npos);
}

}  // namespace zt
