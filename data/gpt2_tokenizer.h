// GPT-2's byte-level BPE (OpenAI's r50k_base vocabulary, as llm.c, nanoGPT and
// tiktoken use it): 50,256 byte strings, each with a rank that is both its id
// and its merge priority, plus <|endoftext|> = 50256.
//
// Encoding: the pre-tokenizer (data/gpt2_pretokenizer.h) cuts the text into
// pieces; each piece starts as its single bytes, and the adjacent pair whose
// concatenation has the lowest rank is merged (the leftmost one on ties) until
// no adjacent pair is in the vocabulary. This is GPT-2's merge order: a
// token's rank is the position of its merge in GPT-2's merges file, and the
// byte-to-unicode alphabet of GPT-2's own files is only a printable spelling
// of the same bytes (piece() shows it). encode() is "ordinary": the text
// "<|endoftext|>" is encoded as the text it is, never as the special token.
//
// decode(encode(s)) == s for every byte string s, well-formed UTF-8 or not.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/tokenizer.h"

namespace zt {

class Gpt2PreTokenizer;

class Gpt2Tokenizer : public Tokenizer {
 public:
  static constexpr int kEndOfText = 50256;
  static constexpr int kVocabSize = 50257;
  // Pieces longer than this merge through a heap, O(n log n) instead of the
  // O(n^2) rescans that are faster for short pieces.
  static constexpr size_t kLinearMergeLimit = 64;

  // Reads a tiktoken file ("base64(bytes) rank" per line) holding GPT-2's
  // 50,256 ranks. Throws DataError with one line naming the file (and line)
  // for anything else. Encoding needs PCRE2; without it the tokenizer still
  // decodes and encode() throws DataError.
  explicit Gpt2Tokenizer(const std::string& vocab_path);
  ~Gpt2Tokenizer() override;

  std::vector<int> encode(const std::string& text) const override;
  // Appends the ids of `text` to `out`; thread-safe.
  void encode_append(std::string_view text, std::vector<int>* out) const;
  std::string decode(const std::vector<int>& ids) const override;
  int vocab_size() const override { return kVocabSize; }
  std::string name() const override { return "gpt2"; }
  int eot_id() const override { return kEndOfText; }
  // The token in GPT-2's byte-to-unicode alphabet ("Ġworld" for " world").
  std::string piece(int id) const override;

  const std::string& vocab_path() const { return path_; }
  // The bytes of token `id` (< kEndOfText).
  std::string_view token_bytes(int id) const;
  // One piece's ids by the linear or the heap merge, whatever its length;
  // both give the same ids (the tests hold them to it).
  void merge_piece(std::string_view piece, bool heap, std::vector<int>* out) const;

 private:
  int rank_of(const unsigned char* bytes, size_t n) const;
  void merge_linear(const unsigned char* s, size_t n, std::vector<int>* out) const;
  void merge_heap(const unsigned char* s, size_t n, std::vector<int>* out) const;
  void encode_piece(const unsigned char* s, size_t n, std::vector<int>* out) const;

  std::string path_;
  std::string bytes_;              // every token's bytes, in id order
  std::vector<uint32_t> offsets_;  // token id's bytes: [offsets_[id], offsets_[id + 1])
  std::vector<uint32_t> slots_;    // open-addressing hash of bytes -> id + 1 (0: empty)
  uint64_t slot_mask_ = 0;
  std::unique_ptr<Gpt2PreTokenizer> pretokenizer_;  // null without PCRE2
};

// Whether this build can encode GPT-2 text (PCRE2 was found).
bool gpt2_encoding_available();

// Where `data.tokenizer: gpt2` looks for gpt2.tiktoken, in order: beside the
// running binary (BUILD/zerotrain reads BUILD/data/gpt2/gpt2.tiktoken), then
// build/data/gpt2/gpt2.tiktoken under the working directory.
std::vector<std::string> gpt2_vocab_candidates();

// GPT-2's printable spelling of a byte (bytes_to_unicode in GPT-2's
// encoder.py): printable Latin-1 bytes stand for themselves, the other 68 for
// U+0100.. in byte order. Returned as UTF-8.
std::string gpt2_byte_to_unicode(unsigned char byte);

}  // namespace zt
