// Text quoted from a file inside a one-line error message: control bytes
// (newline, carriage return, escape, ...) are written as \xNN, so that what a
// file holds can neither break the message across lines nor drive the terminal.
#pragma once
#include <string>
#include <string_view>

namespace zt {

std::string escape_control_bytes(std::string_view text);

}  // namespace zt
