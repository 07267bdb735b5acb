// The input layer every command reads through (data/input/, train/io/output_target):
// numbers parsed exactly or refused, paths named by their kind, directory trees
// without loops or repeats, outputs checked before work.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/input/input_file.h"
#include "data/input/input_scalar.h"
#include "data/input/input_tree.h"
#include "data/shard.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "train/io/output_target.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST_CASE("input: integers are exact or refused, never rounded", "[input]") {
  int64_t i = 0;
  uint64_t u = 0;
  CHECK((parse_int64("9007199254740993", i) && i == 9007199254740993LL));
  CHECK((parse_int64("9.007199254740993e15", i) && i == 9007199254740993LL));
  CHECK((parse_int64("5e8", i) && i == 500000000));
  CHECK((parse_int64("1.5e3", i) && i == 1500));
  CHECK((parse_int64("-9223372036854775808", i) && i == INT64_MIN));
  CHECK((parse_int64("9223372036854775807", i) && i == INT64_MAX));
  CHECK((parse_uint64("18446744073709551615", u) && u == UINT64_MAX));
  CHECK((parse_uint64("0.0e5", u) && u == 0));
  for (const char* bad : {"9223372036854775808", "1e19", "1.5", "1.5e0", "1e-1", "", "-", "e5",
                          "1e", "0x10", "inf", "nan", " 1", "1 ", "+-1", "1e100000000"})
    CHECK_FALSE(parse_int64(bad, i));
  for (const char* bad : {"18446744073709551616", "123456789012345678901", "-1", "2e19"})
    CHECK_FALSE(parse_uint64(bad, u));
  CHECK((parse_uint64("-0", u) && u == 0));
}

TEST_CASE("input: numbers are finite decimals; ranges say what they check", "[input]") {
  double d = 0;
  CHECK((parse_number("1e308", d) && d == 1e308));
  CHECK((parse_number("+2.5", d) && d == 2.5));
  for (const char* bad : {"inf", "-inf", "nan", "1e400", "-1e400", "0x1p3", "1,5", "", ".", "e"})
    CHECK_FALSE(parse_number(bad, d));
  CHECK(range_text(open_between(0, 1, false)) == "in (0, 1)");
  CHECK(range_text(between(0, 1, true)) == "in [0, 1]");
  CHECK(range_text(above(0)) == "> 0");
  CHECK(range_text(at_least(1)) == ">= 1");
  CHECK_FALSE(in_range(1, open_between(0, 1, false)));
  CHECK_FALSE(in_range(0, open_between(0, 1, true)));
  CHECK(in_range(1, open_between(0, 1, true)));
  CHECK(quote_value("12345678901234567890123456789") == "'123456789012345678901234...'");
  CHECK(quote_value("a\nb") == "'a\\x0ab'");
}

TEST_CASE("input: a path that is not a regular file is named by its kind", "[input]") {
  TestDir dir;
  const std::string fifo = dir.path + "/pipe", loop = dir.path + "/loop";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  REQUIRE(::symlink(loop.c_str(), loop.c_str()) == 0);
  write_text(dir.path + "/ok.txt", "x");
  CHECK(input_path_problem(dir.path + "/ok.txt").empty());
  CHECK(input_path_problem(dir.path + "/absent") == kInputAbsent);
  CHECK(input_path_problem(dir.path) == "is a directory, expected a regular file");
  CHECK(input_path_problem(fifo) == "is a named pipe (FIFO), expected a regular file");
  CHECK(input_path_problem("/dev/zero") == "is a character device, expected a regular file");
  CHECK(input_path_problem(loop) == "is a symbolic link loop");
  // InputFile opens a FIFO without blocking and refuses it.
  require_parts(error_of<DataError>([&] { InputFile f(fifo, "config file"); }),
                {fifo, "a named pipe (FIFO), expected a regular file"});
}

TEST_CASE("input: a tree lists each file once and survives link loops", "[input]") {
  TestDir dir;
  const std::string root = dir.path + "/corpus";
  fs::create_directories(root + "/a/b");
  write_text(root + "/a/one.txt", "1");
  write_text(root + "/a/b/two.txt", "2");
  write_text(root + "/.hidden", "h");
  fs::create_directory_symlink(root, root + "/a/b/up");        // back to an ancestor
  fs::create_directory_symlink(root + "/a", root + "/again");  // a second way in
  fs::create_symlink(root + "/a/one.txt", root + "/one_link.txt");
  const std::vector<std::string> files = list_regular_files(root, 100);
  CHECK(files == std::vector<std::string>{root + "/a/b/two.txt", root + "/a/one.txt"});
  require_parts(error_of<DataError>([&] { list_regular_files(root, 1); }),
                {"more than 1 files under the input directory"});
  REQUIRE(::mkfifo((root + "/a/pipe").c_str(), 0600) == 0);
  require_parts(error_of<DataError>([&] { list_regular_files(root, 100); }),
                {root + "/a/pipe: it is a named pipe (FIFO)"});
}

TEST_CASE("output: a target's kind and directory are checked before any work", "[input]") {
  TestDir dir;
  write_text(dir.path + "/file", "x");
  CHECK(output_file_problem(dir.path + "/new.json").empty());
  CHECK(output_file_problem(dir.path + "/file").empty());
  CHECK(output_file_problem(dir.path) == "it is a directory, expected a file to write");
  CHECK(output_file_problem(dir.path + "/no/such/x.json") ==
        "its directory " + dir.path + "/no/such does not exist");
  CHECK(output_file_problem("/dev/null") == "it is a character device, expected a file to write");
  CHECK(output_dir_problem(dir.path).empty());
  CHECK(output_dir_problem(dir.path + "/new/deeper").empty());
  CHECK(output_dir_problem(dir.path + "/file") == "it is a regular file, expected a directory");
  require_parts(output_dir_problem(dir.path + "/file/below"), {"file", "not a directory"});
}

}  // namespace
}  // namespace zt
