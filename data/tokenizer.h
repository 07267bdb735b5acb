// Tokenizers: text <-> token ids. Three kinds:
//   byte           256 ids, id = byte value; always available, needs no files.
//   gpt2           GPT-2's BPE (data/gpt2_tokenizer.h) from gpt2.tiktoken;
//                  encoding needs PCRE2 (ZT_HAVE_PCRE2), decoding works anywhere.
//   sentencepiece  a BPE .model file (byte fallback on), only in builds where
//                  libsentencepiece was found (ZT_HAVE_SENTENCEPIECE).
#pragma once
#include <memory>
#include <string>
#include <vector>

#ifdef ZT_HAVE_SENTENCEPIECE
namespace sentencepiece {
class SentencePieceProcessor;
}
#endif

namespace zt {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::vector<int> encode(const std::string& text) const = 0;
  // Returns the raw bytes the ids stand for (possibly invalid UTF-8; see
  // printable_utf8). Throws DataError for an id outside [0, vocab_size()).
  virtual std::string decode(const std::vector<int>& ids) const = 0;
  virtual int vocab_size() const = 0;
  virtual std::string name() const = 0;
  // The end-of-text (document separator) id, or -1 when there is none.
  virtual int eot_id() const { return -1; }
  // How token `id` reads, for listings: its bytes as printable text, with
  // \xNN for bytes that are not (sentencepiece and GPT-2 use their own spelling).
  virtual std::string piece(int id) const;
};

class ByteTokenizer : public Tokenizer {
 public:
  std::vector<int> encode(const std::string& text) const override;
  std::string decode(const std::vector<int>& ids) const override;
  int vocab_size() const override { return 256; }
  std::string name() const override { return "byte"; }
};

#ifdef ZT_HAVE_SENTENCEPIECE
class SentencePieceTokenizer : public Tokenizer {
 public:
  explicit SentencePieceTokenizer(const std::string& model_path);
  ~SentencePieceTokenizer() override;
  std::vector<int> encode(const std::string& text) const override;
  std::string decode(const std::vector<int>& ids) const override;
  int vocab_size() const override;
  std::string name() const override { return "sentencepiece:" + model_path_; }
  // No eot_id: prepare separates no documents in sentencepiece shards, and
  // the model's </s> never occurs in them.
  std::string piece(int id) const override;

 private:
  std::string model_path_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
};
#endif

// Whether this build has the sentencepiece (BPE) tokenizer.
bool bpe_available();

// spec: "byte"; "gpt2" (gpt2.tiktoken where gpt2_vocab_candidates() says) or
// the path of a .tiktoken file; or the path of a sentencepiece .model file.
// Throws DataError with one line when a file is missing or the kind is not
// built in.
std::unique_ptr<Tokenizer> make_tokenizer(const std::string& spec);

// Trains a sentencepiece BPE model on a text file (one sentence per line),
// writing model_prefix.model and model_prefix.vocab. Byte fallback is on and
// the text is not normalised, so decode(encode(s)) == s for any valid UTF-8 s
// (sentencepiece reads invalid UTF-8 as U+FFFD). The settings are
// deterministic: no sampling or shuffling of sentences, one thread.
void train_bpe(const std::string& text_file, const std::string& model_prefix, int vocab_size);

// Decoded text made safe for a terminal: invalid UTF-8 sequences and control
// bytes other than newline and tab become U+FFFD. Samples from a barely
// trained byte model are full of both.
std::string printable_utf8(const std::string& bytes);

}  // namespace zt
