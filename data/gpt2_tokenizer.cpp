// GPT-2 BPE: the vocabulary file, a hash of token bytes to ranks, and the two
// merge loops (linear rescans for short pieces, a heap for long ones).
#include "data/gpt2_tokenizer.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <fstream>
#include <queue>
#include <sstream>

#include "data/gpt2_pretokenizer.h"
#include "data/input/input_file.h"
#include "data/shard.h"

namespace zt {
namespace {

constexpr int kNoRank = INT_MAX;
constexpr int kRanks = Gpt2Tokenizer::kEndOfText;  // ordinary tokens, ids 0..50255
constexpr char kEndOfTextText[] = "<|endoftext|>";
constexpr size_t kMaxVocabFileBytes = size_t(16) << 20;

// A fast 64-bit hash of short byte strings: 8 bytes at a time, each step an
// xor, a multiply and a shift (splitmix64's finaliser constants).
uint64_t hash_bytes(const unsigned char* p, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t(n) * 0xFF51AFD7ED558CCDull);
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    p += 8;
    n -= 8;
  }
  uint64_t w = 0;
  std::memcpy(&w, p, n);
  h = (h ^ w) * 0x94D049BB133111EBull;
  return h ^ (h >> 29);
}

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Standard base64 with '=' padding; false on anything else.
bool base64_decode(std::string_view text, std::string* out) {
  if (text.empty() || text.size() % 4 != 0) return false;
  out->clear();
  for (size_t i = 0; i < text.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = text[i + k];
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        v[k] = 0;
        ++pad;
      } else {
        if (pad > 0) return false;  // data after padding
        v[k] = base64_value(c);
        if (v[k] < 0) return false;
      }
    }
    const uint32_t bits = uint32_t(v[0]) << 18 | uint32_t(v[1]) << 12 | uint32_t(v[2]) << 6 | v[3];
    out->push_back(char(bits >> 16));
    if (pad < 2) out->push_back(char(bits >> 8 & 0xFF));
    if (pad < 1) out->push_back(char(bits & 0xFF));
  }
  return true;
}

std::string read_vocab_file(const std::string& path) {
  const std::string problem = input_path_problem(path);
  if (problem == kInputAbsent)
    throw DataError(path + ": no such GPT-2 vocabulary file (expected gpt2.tiktoken, " +
                    "\"base64 rank\" per line)");
  if (!problem.empty()) throw DataError(path + ": the GPT-2 vocabulary file " + problem);
  const InputFile file(path, "GPT-2 vocabulary file");
  if (file.size() > kMaxVocabFileBytes)
    throw DataError(path + ": " + std::to_string(file.size()) +
                    " bytes is too large for GPT-2's vocabulary (gpt2.tiktoken is 835 KB)");
  return file.read_all(kMaxVocabFileBytes);
}

}  // namespace

std::string gpt2_byte_to_unicode(unsigned char byte) {
  auto printable = [](unsigned b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
  };
  unsigned cp = byte;
  if (!printable(byte)) {
    cp = 256;
    for (unsigned b = 0; b < byte; ++b) cp += !printable(b);
  }
  std::string out;
  if (cp < 0x80) out += char(cp);
  else out += {char(0xC0 | cp >> 6), char(0x80 | (cp & 0x3F))};
  return out;
}

Gpt2Tokenizer::Gpt2Tokenizer(const std::string& vocab_path) : path_(vocab_path) {
  const std::string text = read_vocab_file(vocab_path);
  std::vector<std::string> tokens(kRanks);
  std::vector<bool> seen(kRanks, false);
  size_t line_no = 0, pos = 0;
  std::string decoded;
  while (pos < text.size()) {
    ++line_no;
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    const std::string where = vocab_path + ":" + std::to_string(line_no) + ": ";
    const size_t space = line.find(' ');
    if (space == std::string_view::npos)
      throw DataError(where + "expected \"base64 rank\", got '" + std::string(line.substr(0, 40)) +
                      "'");
    const std::string_view rank_text = line.substr(space + 1);
    long rank = -1;
    if (!rank_text.empty() && rank_text.size() <= 9 &&
        std::all_of(rank_text.begin(), rank_text.end(),
                    [](char c) { return c >= '0' && c <= '9'; }))
      rank = std::stol(std::string(rank_text));
    if (rank < 0 || rank >= kRanks)
      throw DataError(where + "rank '" + std::string(rank_text.substr(0, 20)) +
                      "' is not in [0, 50255]: not GPT-2's r50k_base vocabulary");
    if (!base64_decode(line.substr(0, space), &decoded))
      throw DataError(where + "'" + std::string(line.substr(0, std::min<size_t>(space, 40))) +
                      "' is not base64");
    if (seen[size_t(rank)]) throw DataError(where + "rank " + std::to_string(rank) + " repeated");
    seen[size_t(rank)] = true;
    tokens[size_t(rank)] = decoded;
  }
  if (line_no != size_t(kRanks))
    throw DataError(vocab_path + ": " + std::to_string(line_no) +
                    " ranks; GPT-2's vocabulary (r50k_base) has 50256 besides <|endoftext|>");

  offsets_.reserve(kRanks + 2);
  for (const std::string& t : tokens) {
    offsets_.push_back(uint32_t(bytes_.size()));
    bytes_ += t;
  }
  offsets_.push_back(uint32_t(bytes_.size()));
  bytes_ += kEndOfTextText;
  offsets_.push_back(uint32_t(bytes_.size()));

  slots_.assign(size_t(1) << 17, 0);  // load factor 0.38
  slot_mask_ = slots_.size() - 1;
  for (int id = 0; id < kRanks; ++id) {
    const std::string& t = tokens[size_t(id)];
    const unsigned char* p = reinterpret_cast<const unsigned char*>(t.data());
    if (rank_of(p, t.size()) >= 0)
      throw DataError(vocab_path + ": token bytes of rank " + std::to_string(id) +
                      " appear twice: not a BPE vocabulary");
    uint64_t slot = hash_bytes(p, t.size()) & slot_mask_;
    while (slots_[slot] != 0) slot = (slot + 1) & slot_mask_;
    slots_[slot] = uint32_t(id) + 1;
  }
  for (int b = 0; b < 256; ++b) {
    const unsigned char byte = static_cast<unsigned char>(b);
    if (rank_of(&byte, 1) < 0)
      throw DataError(vocab_path + ": byte " + std::to_string(b) +
                      " has no token: not a byte-level BPE vocabulary");
  }
  if (Gpt2PreTokenizer::available()) pretokenizer_.reset(new Gpt2PreTokenizer());
}

Gpt2Tokenizer::~Gpt2Tokenizer() = default;

int Gpt2Tokenizer::rank_of(const unsigned char* p, size_t n) const {
  uint64_t slot = hash_bytes(p, n) & slot_mask_;
  for (uint32_t entry; (entry = slots_[slot]) != 0; slot = (slot + 1) & slot_mask_) {
    const uint32_t id = entry - 1;
    const uint32_t begin = offsets_[id];
    if (offsets_[id + 1] - begin == n && std::memcmp(bytes_.data() + begin, p, n) == 0)
      return int(id);
  }
  return -1;
}

std::string_view Gpt2Tokenizer::token_bytes(int id) const {
  return std::string_view(bytes_.data() + offsets_[size_t(id)],
                          offsets_[size_t(id) + 1] - offsets_[size_t(id)]);
}

// Parts are [start[i], start[i + 1]); pair[i] is the rank of parts i and i+1
// joined. Each round merges the leftmost lowest-ranked pair.
void Gpt2Tokenizer::merge_linear(const unsigned char* s, size_t n, std::vector<int>* out) const {
  uint32_t start[kLinearMergeLimit + 1];
  int pair[kLinearMergeLimit];
  size_t parts = n;
  for (size_t i = 0; i <= n; ++i) start[i] = uint32_t(i);
  auto rank_at = [&](size_t i) {
    if (i + 2 > parts) return kNoRank;
    const int r = rank_of(s + start[i], start[i + 2] - start[i]);
    return r < 0 ? kNoRank : r;
  };
  for (size_t i = 0; i + 1 < parts; ++i) pair[i] = rank_at(i);
  while (parts > 1) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < parts; ++i)
      if (pair[i] < pair[best]) best = i;
    if (pair[best] == kNoRank) break;
    std::memmove(start + best + 1, start + best + 2, (parts - best - 1) * sizeof start[0]);
    if (parts >= best + 3)
      std::memmove(pair + best + 1, pair + best + 2, (parts - best - 3) * sizeof pair[0]);
    --parts;
    if (best + 1 < parts) pair[best] = rank_at(best);
    if (best > 0) pair[best - 1] = rank_at(best - 1);
  }
  for (size_t i = 0; i < parts; ++i) out->push_back(rank_of(s + start[i], start[i + 1] - start[i]));
}

// The same merge order on a linked list of parts: a heap of (rank, start)
// pops the leftmost lowest-ranked pair; entries made stale by a merge are
// recognised because their rank no longer equals the part's current pair rank.
void Gpt2Tokenizer::merge_heap(const unsigned char* s, size_t n, std::vector<int>* out) const {
  struct Part {
    uint32_t start, end;
    int32_t next;  // -1: last part
    int32_t prev;
    int pair;  // rank of this part joined with the next, kNoRank if none
  };
  std::vector<Part> parts(n);
  for (size_t i = 0; i < n; ++i)
    parts[i] = Part{uint32_t(i), uint32_t(i + 1), i + 1 < n ? int32_t(i + 1) : -1, int32_t(i) - 1,
                    kNoRank};
  auto pair_rank = [&](const Part& p) {
    if (p.next < 0) return kNoRank;
    const int r = rank_of(s + p.start, parts[size_t(p.next)].end - p.start);
    return r < 0 ? kNoRank : r;
  };
  using Entry = std::pair<int, uint32_t>;  // (rank, start = index of the part)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  for (size_t i = 0; i + 1 < n; ++i) {
    parts[i].pair = pair_rank(parts[i]);
    if (parts[i].pair != kNoRank) heap.emplace(parts[i].pair, uint32_t(i));
  }
  while (!heap.empty()) {
    const auto [rank, index] = heap.top();
    heap.pop();
    Part& p = parts[index];
    if (p.pair != rank) continue;  // stale, or the part was merged away (pair = kNoRank)
    Part& q = parts[size_t(p.next)];
    p.end = q.end;
    p.next = q.next;
    if (q.next >= 0) parts[size_t(q.next)].prev = int32_t(index);
    q.pair = kNoRank;
    p.pair = pair_rank(p);
    if (p.pair != kNoRank) heap.emplace(p.pair, index);
    if (p.prev >= 0) {
      Part& o = parts[size_t(p.prev)];
      o.pair = pair_rank(o);
      if (o.pair != kNoRank) heap.emplace(o.pair, uint32_t(p.prev));
    }
  }
  for (int32_t i = 0; i >= 0; i = parts[size_t(i)].next)
    out->push_back(
        rank_of(s + parts[size_t(i)].start, parts[size_t(i)].end - parts[size_t(i)].start));
}

void Gpt2Tokenizer::merge_piece(std::string_view piece, bool heap, std::vector<int>* out) const {
  if (piece.empty()) return;
  const unsigned char* s = reinterpret_cast<const unsigned char*>(piece.data());
  if (heap || piece.size() > kLinearMergeLimit) merge_heap(s, piece.size(), out);
  else merge_linear(s, piece.size(), out);
}

void Gpt2Tokenizer::encode_piece(const unsigned char* s, size_t n, std::vector<int>* out) const {
  const int whole = rank_of(s, n);  // most pieces of ordinary text are one token
  if (whole >= 0) out->push_back(whole);
  else if (n > kLinearMergeLimit) merge_heap(s, n, out);
  else merge_linear(s, n, out);
}

void Gpt2Tokenizer::encode_append(std::string_view text, std::vector<int>* out) const {
  if (text.empty()) return;
  if (!pretokenizer_) Gpt2PreTokenizer();  // throws the one-line "unavailable" error
  std::vector<std::string_view> pieces;
  pieces.reserve(text.size() / 4 + 1);
  pretokenizer_->split(text, &pieces);
  out->reserve(out->size() + text.size() / 3);
  for (std::string_view piece : pieces)
    encode_piece(reinterpret_cast<const unsigned char*>(piece.data()), piece.size(), out);
}

std::vector<int> Gpt2Tokenizer::encode(const std::string& text) const {
  std::vector<int> ids;
  encode_append(text, &ids);
  return ids;
}

std::string Gpt2Tokenizer::decode(const std::vector<int>& ids) const {
  std::string text;
  text.reserve(ids.size() * 4);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= kVocabSize)
      throw DataError("gpt2 tokenizer: id " + std::to_string(ids[i]) + " at index " +
                      std::to_string(i) + " is out of range for vocab size " +
                      std::to_string(kVocabSize));
    text += token_bytes(ids[i]);
  }
  return text;
}

std::string Gpt2Tokenizer::piece(int id) const {
  if (id < 0 || id >= kVocabSize)
    throw DataError("gpt2 tokenizer: id " + std::to_string(id) +
                    " is out of range for vocab size " + std::to_string(kVocabSize));
  if (id == kEndOfText) return kEndOfTextText;
  std::string out;
  for (char c : token_bytes(id)) out += gpt2_byte_to_unicode(static_cast<unsigned char>(c));
  return out;
}

bool gpt2_encoding_available() { return Gpt2PreTokenizer::available(); }

std::vector<std::string> gpt2_vocab_candidates() {
  std::vector<std::string> paths;
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    std::string dir(exe, size_t(n));
    dir = dir.substr(0, dir.find_last_of('/'));
    paths.push_back(dir + "/data/gpt2/gpt2.tiktoken");
  }
  paths.push_back("build/data/gpt2/gpt2.tiktoken");
  return paths;
}

}  // namespace zt
