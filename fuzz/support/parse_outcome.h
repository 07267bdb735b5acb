// What a fuzz target accepts from the parser it feeds: a result, or one of the
// project's own one-line errors (ConfigError, DataError, JsonError, IoError).
// Anything else (std::bad_alloc, std::out_of_range or std::invalid_argument
// from the standard library, an unknown exception, an error message that is
// empty or spans lines) is a finding: it is printed and the process aborts, so
// that libFuzzer saves the input as a reproducer.
#pragma once
#include <functional>
#include <string>

namespace zt::fuzz {

// Parsers whose documented error is a plain std::runtime_error ("report"'s
// summary reader) accept that one as well; its subclasses from the standard
// library (std::filesystem::filesystem_error, std::range_error, ...) still count as findings.
enum class PlainRuntimeError { finding, expected };

void parse_or_reject(const std::function<void()>& parse,
                     PlainRuntimeError plain = PlainRuntimeError::finding);

// Reports a finding that is not an exception (a broken round trip, a result
// that contradicts what was parsed) and aborts.
[[noreturn]] void finding(const std::string& what);

}  // namespace zt::fuzz
