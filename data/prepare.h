// `zerotrain prepare` (the command line is train/commands/prepare_command.cpp): text to
// train/val token shards in llm.c's format, uint16 when the vocab fits.
//
// byte, bpe: one text file, split by lines into blocks; a fraction F of the
//   blocks, spread evenly through the file, is the validation split. byte:
//   tokens are the bytes. bpe: a sentencepiece BPE model of N pieces is
//   trained on the train split (DIR/tokenizer.model, .vocab) and encodes both.
// gpt2: a file, a directory or a glob of files, read as documents (one per
//   file, or blank-line-separated paragraphs); the token stream is, as in
//   llm.c's FineWeb preparation, <|endoftext|> then the document's ids, for
//   every document in order ("<|endoftext|>" inside a document is text). The
//   stream is cut into split chunks (split_chunk_tokens) and chunk k goes to
//   validation when is_validation_chunk(k, F); like llm.c's shards, chunks
//   cut documents. Encoding runs on `threads` threads; the output does not
//   depend on their number.
//
// Everything is built in a hidden temporary directory next to DIR and renamed
// to DIR at the end, so an interrupted run never leaves a partial DIR.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>

namespace zt {

struct PrepareOptions {
  std::string input;
  std::string out;
  std::string tokenizer;  // byte | bpe | gpt2 | PATH.tiktoken
  int vocab = 0;          // bpe: the model's size
  double val_fraction = 0.05;
  int64_t shard_tokens = 100000000;
  std::string documents = "file";  // gpt2: file | paragraphs
  int threads = 1;
};

// Writes the corpus; prints one line per file written and the config values
// that select the result to `out`, and progress lines on long inputs to
// `progress`. Throws DataError with one line on any problem.
void prepare_corpus(const PrepareOptions& o, std::ostream& out, std::ostream& progress);

// Whether block (line-based splits) or chunk k (gpt2) is validation: a
// fraction F of them, spread evenly (F = 0.05: every 20th).
bool is_validation_chunk(int64_t k, double val_fraction);
// gpt2: tokens per split chunk for an input of `input_bytes`: about ten
// validation chunks (at an estimated 4 bytes per token), at most 2^20 tokens.
int64_t split_chunk_tokens(int64_t input_bytes, double val_fraction);

}  // namespace zt
