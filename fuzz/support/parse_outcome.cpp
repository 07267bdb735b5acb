#include "fuzz/support/parse_outcome.h"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <typeinfo>

#include "data/json_reader.h"
#include "data/shard.h"
#include "train/config/config.h"
#include "train/io/atomic_file.h"

namespace zt::fuzz {
namespace {

// The project's errors are one line each: the CLI prints them as they are.
void check_one_line(const char* type, const std::exception& e) {
  const std::string message = e.what();
  if (message.empty()) finding(std::string(type) + " with an empty message");
  if (message.find('\n') != std::string::npos)
    finding(std::string(type) + " spanning lines: " + message);
}

}  // namespace

void finding(const std::string& what) {
  std::fprintf(stderr, "FUZZ FINDING: %s\n", what.c_str());
  std::abort();
}

void parse_or_reject(const std::function<void()>& parse, PlainRuntimeError plain) {
  try {
    parse();
  } catch (const ConfigError& e) {
    check_one_line("ConfigError", e);
  } catch (const DataError& e) {
    check_one_line("DataError", e);
  } catch (const JsonError& e) {
    check_one_line("JsonError", e);
  } catch (const IoError& e) {
    check_one_line("IoError", e);
  } catch (const std::runtime_error& e) {
    if (plain == PlainRuntimeError::finding || typeid(e) != typeid(std::runtime_error))
      finding(std::string("unexpected exception ") + typeid(e).name() + ": " + e.what());
    check_one_line("std::runtime_error", e);
  } catch (const std::exception& e) {
    finding(std::string("unexpected exception ") + typeid(e).name() + ": " + e.what());
  } catch (...) {
    finding("unexpected exception of a non-std::exception type");
  }
}

}  // namespace zt::fuzz
