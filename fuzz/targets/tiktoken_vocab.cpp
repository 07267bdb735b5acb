// A .tiktoken vocabulary as `data.tokenizer: FILE.tiktoken` and `tokenize
// --tokenizer` load it (make_tokenizer), then a round trip through it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "data/gpt2_tokenizer.h"
#include "data/tokenizer.h"
#include "fuzz/support/parse_outcome.h"
#include "fuzz/support/scratch_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = zt::fuzz::write_scratch("vocab.tiktoken", data, size);
  zt::fuzz::parse_or_reject([&] {
    const std::unique_ptr<zt::Tokenizer> t = zt::make_tokenizer(path);
    const std::string text = "Hello, world! \xff\xfe 12345 <|endoftext|>";
    if (zt::gpt2_encoding_available() && t->decode(t->encode(text)) != text)
      zt::fuzz::finding("a loaded vocabulary does not decode what it encoded");
    (void)t->piece(t->vocab_size() - 1);
  });
  return 0;
}
