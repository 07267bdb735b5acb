// The gpt2 half of `prepare` (see data/prepare.h): documents to an
// <|endoftext|>-separated token stream, encoded on several threads.
#pragma once
#include <ostream>

#include "data/prepare.h"

namespace zt {

void prepare_documents(const PrepareOptions& o, std::ostream& out, std::ostream& progress);

}  // namespace zt
