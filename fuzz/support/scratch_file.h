// Most parsers read a path, as users call them, so each input is written to a
// file in a directory private to the fuzzing process ($ZT_FUZZ_SCRATCH, which
// fuzz/run.sh sets; else a new one under $TMPDIR or /tmp), removed when the
// process exits.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace zt::fuzz {

// The process's scratch directory, created on first use.
const std::string& scratch_dir();
// Writes the bytes to scratch_dir()/name (replacing it) and returns its path.
std::string write_scratch(const std::string& name, const uint8_t* data, size_t size);
std::string write_scratch(const std::string& name, const std::string& bytes);

}  // namespace zt::fuzz
