// HellaSwag's validation set in its public JSONL form (hellaswag_val.jsonl):
// one object per line with "ctx" (the context), "endings" (four candidate
// continuations) and "label" (the index of the right one, an integer or, as in
// Hugging Face's copy, a one-digit string); other keys, such
// as "ind", "activity_label" or "ctx_a", are ignored.
#pragma once
#include <array>
#include <string>
#include <vector>

namespace zt {

struct HellaswagExample {
  std::string context;
  std::array<std::string, 4> endings;
  int label = 0;
  int line = 0;  // in the file, for messages
};

// Reads every example; blank lines are skipped. Throws DataError with one
// line, "FILE:LINE: ...", for a line that is not JSON or lacks a non-empty
// string ctx, four non-empty string endings or a label in 0..3, and
// for a file without examples or over 256 MiB (the validation set is 11 MB).
std::vector<HellaswagExample> read_hellaswag(const std::string& path);

}  // namespace zt
