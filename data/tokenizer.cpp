// Byte and sentencepiece tokenizers, BPE training, and terminal-safe text.
#include "data/tokenizer.h"

#include <sys/stat.h>

#include <cstdio>

#include "data/gpt2_tokenizer.h"
#include "data/input/input_file.h"
#include "data/shard.h"
#include "data/utf8.h"

#ifdef ZT_HAVE_SENTENCEPIECE
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <unordered_map>
#endif

namespace zt {
namespace {

std::string id_out_of_range(int id, size_t index, int vocab, const std::string& tokenizer) {
  return tokenizer + " tokenizer: id " + std::to_string(id) + " at index " + std::to_string(index) +
         " is out of range for vocab size " + std::to_string(vocab);
}

#ifdef ZT_HAVE_SENTENCEPIECE
bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// sentencepiece statuses may span lines; our errors are one line.
std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}
#endif

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::unique_ptr<Tokenizer> make_default_gpt2() {
  const std::vector<std::string> candidates = gpt2_vocab_candidates();
  for (const std::string& path : candidates) {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode))
      return std::make_unique<Gpt2Tokenizer>(path);
  }
  std::string tried;
  for (const std::string& path : candidates) tried += (tried.empty() ? "" : " or ") + path;
  throw DataError("data.tokenizer gpt2: no GPT-2 vocabulary at " + tried +
                  "; `make` fetches it (scripts/fetch_gpt2_vocab.sh), or give its path as "
                  "data.tokenizer=PATH/gpt2.tiktoken");
}

}  // namespace

std::string Tokenizer::piece(int id) const {
  const std::string bytes = decode({id});
  std::string out;
  const unsigned char* p = reinterpret_cast<const unsigned char*>(bytes.data());
  for (size_t i = 0; i < bytes.size();) {
    const Utf8Scan seq = scan_utf8(p + i, bytes.size() - i);
    if (seq.complete && (p[i] >= 0x20 && p[i] != 0x7F && !(p[i] == 0xC2 && p[i + 1] < 0xA0))) {
      if (p[i] == '\\') out += '\\';
      out.append(bytes, i, seq.length);
      i += seq.length;
      continue;
    }
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02X", p[i]);
    out += hex;
    ++i;
  }
  return out;
}

std::vector<int> ByteTokenizer::encode(const std::string& text) const {
  std::vector<int> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
  return ids;
}

std::string ByteTokenizer::decode(const std::vector<int>& ids) const {
  std::string bytes(ids.size(), '\0');
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] > 255) throw DataError(id_out_of_range(ids[i], i, 256, "byte"));
    bytes[i] = static_cast<char>(ids[i]);
  }
  return bytes;
}

#ifdef ZT_HAVE_SENTENCEPIECE
SentencePieceTokenizer::SentencePieceTokenizer(const std::string& model_path)
    : model_path_(model_path), processor_(new sentencepiece::SentencePieceProcessor()) {
  const std::string problem = input_path_problem(model_path);
  if (problem == kInputAbsent)
    throw DataError(
        model_path +
        ": no such tokenizer model (data.tokenizer must be 'byte' or a sentencepiece .model file)");
  if (!problem.empty()) throw DataError(model_path + ": the tokenizer model " + problem);
  auto status = processor_->Load(model_path);
  if (!status.ok())
    throw DataError(model_path +
                    ": cannot load sentencepiece model: " + one_line(status.ToString()));
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::vector<int> SentencePieceTokenizer::encode(const std::string& text) const {
  std::vector<int> ids;
  auto status = processor_->Encode(text, &ids);
  if (!status.ok())
    throw DataError(model_path_ + ": encode failed: " + one_line(status.ToString()));
  return ids;
}

std::string SentencePieceTokenizer::decode(const std::vector<int>& ids) const {
  const int vocab = vocab_size();
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      throw DataError(id_out_of_range(ids[i], i, vocab, model_path_));
  std::string text;
  auto status = processor_->Decode(ids, &text);
  if (!status.ok())
    throw DataError(model_path_ + ": decode failed: " + one_line(status.ToString()));
  return text;
}

int SentencePieceTokenizer::vocab_size() const { return processor_->GetPieceSize(); }

std::string SentencePieceTokenizer::piece(int id) const {
  if (id < 0 || id >= vocab_size())
    throw DataError(id_out_of_range(id, 0, vocab_size(), model_path_));
  return processor_->IdToPiece(id);
}
#endif

bool bpe_available() {
#ifdef ZT_HAVE_SENTENCEPIECE
  return true;
#else
  return false;
#endif
}

std::unique_ptr<Tokenizer> make_tokenizer(const std::string& spec) {
  if (spec == "byte") return std::make_unique<ByteTokenizer>();
  if (spec.empty())
    throw DataError(
        "data.tokenizer is empty; expected 'byte', 'gpt2', a .tiktoken file or a sentencepiece "
        ".model file");
  if (spec == "gpt2") return make_default_gpt2();
  if (ends_with(spec, ".tiktoken")) return std::make_unique<Gpt2Tokenizer>(spec);
#ifdef ZT_HAVE_SENTENCEPIECE
  return std::make_unique<SentencePieceTokenizer>(spec);
#else
  throw DataError(spec +
                  ": the BPE (sentencepiece) tokenizer is unavailable in this build "
                  "(built without libsentencepiece); use data.tokenizer=byte");
#endif
}

void train_bpe(const std::string& text_file, const std::string& model_prefix, int vocab_size) {
#ifdef ZT_HAVE_SENTENCEPIECE
  if (!file_exists(text_file)) throw DataError(text_file + ": no such file (BPE training text)");
  if (vocab_size <= 0)
    throw DataError(text_file + ": BPE vocab size must be positive, got " +
                    std::to_string(vocab_size));
  // identity normalisation, no dummy prefix and no whitespace cleanup keep
  // decode(encode(s)) == s; byte fallback covers any byte never seen in
  // training. All sentences are used, in file order, by one thread, so the
  // same text always gives the same model.
  const std::unordered_map<std::string, std::string> options = {
      {"input", text_file},
      {"model_prefix", model_prefix},
      {"vocab_size", std::to_string(vocab_size)},
      {"model_type", "bpe"},
      {"byte_fallback", "true"},
      {"character_coverage", "0.9995"},
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"add_dummy_prefix", "false"},
      {"max_sentence_length", "65536"},
      {"input_sentence_size", "0"},
      {"shuffle_input_sentence", "false"},
      {"num_threads", "1"},
      {"minloglevel", "1"},
  };
  auto status = sentencepiece::SentencePieceTrainer::Train(options);
  if (!status.ok())
    throw DataError(text_file + ": sentencepiece BPE training (vocab " +
                    std::to_string(vocab_size) + ") failed: " + one_line(status.ToString()));
#else
  (void)model_prefix;
  (void)vocab_size;
  throw DataError(text_file +
                  ": cannot train a BPE tokenizer: sentencepiece is unavailable in this build "
                  "(built without libsentencepiece); use the byte tokenizer");
#endif
}

// Invalid UTF-8 becomes one U+FFFD per maximal subpart (see scan_utf8), and
// scanning resumes at the first byte that did not fit.
std::string printable_utf8(const std::string& bytes) {
  static const char kReplacement[] = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(bytes.size());
  const unsigned char* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char lead = p[i];
    if (lead < 0x80) {
      bool control = (lead < 0x20 && lead != '\n' && lead != '\t') || lead == 0x7F;
      if (control) out += kReplacement;
      else out += char(lead);
      ++i;
      continue;
    }
    const Utf8Scan seq = scan_utf8(p + i, n - i);
    // C1 controls (U+0080..U+009F, encoded C2 80..C2 9F) act as terminal escapes.
    const bool c1_control = seq.complete && seq.length == 2 && lead == 0xC2 && p[i + 1] < 0xA0;
    if (seq.complete && !c1_control) out.append(bytes, i, seq.length);
    else out += kReplacement;
    i += seq.length;
  }
  return out;
}

}  // namespace zt
