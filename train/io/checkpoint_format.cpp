#include "train/io/checkpoint_format.h"

#include <yaml-cpp/yaml.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "data/input/escape_control.h"
#include "data/shard.h"
#include "train/io/byte_fields.h"
#include "train/io/json_writer.h"

namespace zt {
namespace {

constexpr char kMagic[8] = {'Z', 'T', 'C', 'K', 'P', 'T', '0', '2'};
constexpr char kOldMagic[8] = {'Z', 'T', 'C', 'K', 'P', 'T', '0', '1'};
constexpr size_t kVerifyChunk = size_t(4) << 20;

// Control bytes quoted from the file (a multi-line YAML scalar, yaml-cpp
// quoting a newline) as \xNN: errors are one line.
[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw DataError(path + ": " + escape_control_bytes(what));
}

// Typed access to meta.json (read with yaml-cpp, JSON being YAML).
class MetaReader {
 public:
  MetaReader(const YAML::Node& root, const std::string& path) : root_(root), path_(path) {}

  YAML::Node node(const YAML::Node& parent, const std::string& key,
                  const std::string& where) const {
    // yaml-cpp throws its own BadSubscript for a key looked up in a scalar.
    if (!parent.IsMap())
      bad(path_, "field '" + where.substr(0, where.size() - 1) + "': expected an object, got a " +
                     kind(parent));
    const YAML::Node n = parent[key];
    if (!n) bad(path_, "missing field '" + where + key + "'");
    return n;
  }
  std::string text(const YAML::Node& parent, const std::string& key,
                   const std::string& where = "") const {
    const YAML::Node n = node(parent, key, where);
    if (!n.IsScalar())
      bad(path_, "field '" + where + key + "': expected a string, got a " + kind(n));
    return n.Scalar();
  }
  // An integer in [lo, hi], written in decimal digits.
  int64_t integer(const YAML::Node& parent, const std::string& key, int64_t lo, int64_t hi,
                  const std::string& where = "") const {
    const YAML::Node n = node(parent, key, where);
    const std::string s = n.IsScalar() ? n.Scalar() : "";
    const size_t first = !s.empty() && s[0] == '-' ? 1 : 0;
    bool ok = s.size() > first && s.find_first_not_of("0123456789", first) == std::string::npos;
    errno = 0;
    const long long v = ok ? std::strtoll(s.c_str(), nullptr, 10) : 0;
    ok = ok && errno == 0 && v >= lo && v <= hi;
    if (!ok)
      bad(path_, "field '" + where + key + "': expected an integer in [" + std::to_string(lo) +
                     ", " + std::to_string(hi) + "], got " +
                     (n.IsScalar() ? "'" + s + "'" : "a " + kind(n)));
    return v;
  }
  uint32_t crc(const YAML::Node& parent, const std::string& key, const std::string& where) const {
    const std::string s = text(parent, key, where);
    if (s.size() != 8 || s.find_first_not_of("0123456789abcdef") != std::string::npos)
      bad(path_, "field '" + where + key + "': expected 8 lowercase hex digits, got '" + s + "'");
    return static_cast<uint32_t>(std::strtoul(s.c_str(), nullptr, 16));
  }
  FileRecord file(const YAML::Node& n, const std::string& where) const {
    if (!n.IsMap()) bad(path_, "field '" + where + "': expected an object, got a " + kind(n));
    FileRecord r;
    r.name = text(n, "name", where + ".");
    r.bytes = static_cast<uint64_t>(integer(n, "bytes", 0, INT64_MAX, where + "."));
    r.crc32 = crc(n, "crc32", where + ".");
    return r;
  }
  const YAML::Node& root() const { return root_; }

 private:
  static std::string kind(const YAML::Node& n) {
    return n.IsMap() ? "object" : n.IsSequence() ? "list" : n.IsNull() ? "null" : "scalar";
  }
  YAML::Node root_;
  std::string path_;
};

JsonObject file_json(const FileRecord& f) {
  JsonObject o;
  o.add("name", f.name).add("bytes", f.bytes).add("crc32", crc32_hex(f.crc32));
  return o;
}

}  // namespace

uint32_t crc32_of(const void* data, size_t n, uint32_t crc) {
  return static_cast<uint32_t>(crc32_z(crc, static_cast<const Bytef*>(data), n));
}

uint32_t crc32_concat(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  return static_cast<uint32_t>(crc32_combine64(crc_a, crc_b, static_cast<z_off64_t>(len_b)));
}

std::string crc32_hex(uint32_t crc) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", crc);
  return buf;
}

std::string rank_file_name(int rank) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "rank_%05d.bin", rank);
  return buf;
}

std::string encode_rank_header(const RankFileHeader& h) {
  std::string out(kMagic, 8);
  put_field<int64_t>(out, h.step);
  put_field<int32_t>(out, h.world);
  put_field<int32_t>(out, h.rank);
  put_field<int64_t>(out, static_cast<int64_t>(h.pieces.size()));
  put_field<uint64_t>(out, h.data_bytes);
  put_field<uint32_t>(out, h.data_crc);
  std::string table;
  for (const PieceExtent& p : h.pieces) {
    put_field<uint64_t>(table, p.flat_begin);
    put_field<uint64_t>(table, p.n);
  }
  put_field<uint32_t>(out, crc32_of(table.data(), table.size(), crc32_of(out.data(), out.size())));
  return out + table;
}

RankFileHeader read_rank_header(const InputFile& f) {
  return read_rank_header(f.path(), f.size(),
                          [&f](uint64_t at, void* dst, size_t n) { f.read_at(at, dst, n); });
}

RankFileHeader read_rank_header(const std::string& path, uint64_t size, const ReadAt& read_at) {
  if (size < kRankHeaderBytes)
    bad(path, "truncated checkpoint shard: " + std::to_string(size) + " bytes, shorter than its " +
                  std::to_string(kRankHeaderBytes) + "-byte header");
  char head[kRankHeaderBytes];
  read_at(0, head, sizeof head);
  if (std::memcmp(head, kOldMagic, 8) == 0)
    bad(path,
        "checkpoint format ZTCKPT01 (written before checkpoints carried checksums) cannot "
        "be verified and is not loaded; retrain, or load it with the zerotrain that wrote it");
  if (std::memcmp(head, kMagic, 8) != 0)
    bad(path, "not a zerotrain checkpoint shard (magic is not ZTCKPT02)");
  RankFileHeader h;
  h.step = get_field<int64_t>(head + 8);
  h.world = get_field<int32_t>(head + 16);
  h.rank = get_field<int32_t>(head + 20);
  const int64_t n_pieces = get_field<int64_t>(head + 24);
  h.data_bytes = get_field<uint64_t>(head + 32);
  h.data_crc = get_field<uint32_t>(head + 40);
  const uint32_t header_crc = get_field<uint32_t>(head + 44);
  const uint64_t room = size - kRankHeaderBytes;
  if (n_pieces < 0 || static_cast<uint64_t>(n_pieces) > room / kPieceEntryBytes)
    bad(path, "piece count " + std::to_string(n_pieces) + " does not fit the file's " +
                  std::to_string(size) + " bytes");
  const uint64_t table_bytes = kPieceEntryBytes * static_cast<uint64_t>(n_pieces);
  if (h.data_bytes != room - table_bytes)
    bad(path, "the header gives " + std::to_string(h.data_bytes) +
                  " data bytes, but the file has " + std::to_string(room - table_bytes) +
                  " after its piece table");
  std::string table(static_cast<size_t>(table_bytes), '\0');
  read_at(kRankHeaderBytes, table.data(), table.size());
  const uint32_t computed = crc32_of(table.data(), table.size(), crc32_of(head, 44));
  if (computed != header_crc)
    bad(path, "header checksum mismatch (stored " + crc32_hex(header_crc) + ", computed " +
                  crc32_hex(computed) + "): the header or piece table is corrupt");
  uint64_t elements = 0;
  for (int64_t i = 0; i < n_pieces; i++) {
    PieceExtent p{get_field<uint64_t>(table.data() + 16 * i),
                  get_field<uint64_t>(table.data() + 16 * i + 8)};
    if (p.n > h.data_bytes / kStateBytesPerElement - elements)
      bad(path, "piece " + std::to_string(i) + " (" + std::to_string(p.n) +
                    " elements) runs past the data section");
    elements += p.n;
    h.pieces.push_back(p);
  }
  if (elements * kStateBytesPerElement != h.data_bytes)
    bad(path, "the pieces hold " + std::to_string(elements) +
                  " elements, but the data section is " + std::to_string(h.data_bytes) +
                  " bytes (12 per element)");
  return h;
}

uint32_t verify_rank_data(const InputFile& f, const RankFileHeader& h) {
  return verify_rank_data(
      f.path(), [&f](uint64_t at, void* dst, size_t n) { f.read_at(at, dst, n); }, h);
}

uint32_t verify_rank_data(const std::string& path, const ReadAt& read_at, const RankFileHeader& h) {
  std::string head = encode_rank_header(h);
  std::vector<char> chunk(std::min<uint64_t>(kVerifyChunk, std::max<uint64_t>(h.data_bytes, 1)));
  uint32_t crc = 0;
  for (uint64_t at = 0; at < h.data_bytes; at += chunk.size()) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), h.data_bytes - at));
    read_at(h.table_end() + at, chunk.data(), n);
    crc = crc32_of(chunk.data(), n, crc);
  }
  if (crc != h.data_crc)
    bad(path, "data checksum mismatch (stored " + crc32_hex(h.data_crc) + ", computed " +
                  crc32_hex(crc) + "): the optimizer state is corrupt");
  return crc32_concat(crc32_of(head.data(), head.size()), crc, h.data_bytes);
}

std::vector<uint64_t> piece_data_offsets(const RankFileHeader& h) {
  std::vector<uint64_t> offsets;
  uint64_t at = h.table_end();
  for (const PieceExtent& p : h.pieces) {
    offsets.push_back(at);
    at += kStateBytesPerElement * p.n;
  }
  return offsets;
}

TokenizerIdentity tokenizer_identity(const std::string& name) {
  TokenizerIdentity t;
  t.name = name;
  if (name == "byte") return t;
  try {
    const std::string bytes = read_small_file(name, "tokenizer model", uint64_t(1) << 30);
    t.has_digest = true;
    t.bytes = bytes.size();
    t.crc32 = crc32_of(bytes.data(), bytes.size());
  } catch (const DataError&) {
    // Unreadable here (sampling off, file elsewhere): the name alone identifies it.
  }
  return t;
}

uint64_t gpt_param_count(const GPTConfig& m) {
  using u128 = unsigned __int128;
  if (m.n_layer < 1 || m.n_embd < 1 || m.vocab_size < 1 || m.seq_len < 1) return 0;
  const u128 C = static_cast<u128>(m.n_embd);
  const u128 n = static_cast<u128>(m.vocab_size) * C + static_cast<u128>(m.seq_len) * C +
                 static_cast<u128>(m.n_layer) * (12 * C * C + 13 * C) + 2 * C;
  return n >= (u128(1) << 62) ? 0 : static_cast<uint64_t>(n);
}

std::string encode_meta(const CheckpointMeta& m) {
  JsonObject model, tokenizer;
  model.add("n_layer", m.model.n_layer)
      .add("n_head", m.model.n_head)
      .add("n_embd", m.model.n_embd)
      .add("vocab_size", m.model.vocab_size)
      .add("seq_len", m.model.seq_len);
  tokenizer.add("name", m.tokenizer.name);
  if (m.tokenizer.has_digest)
    tokenizer.add("bytes", m.tokenizer.bytes).add("crc32", crc32_hex(m.tokenizer.crc32));
  std::string ranks = "[";
  for (const RankRecord& r : m.ranks) {
    JsonObject o = file_json(r.file);
    o.add("pieces", r.pieces).add("elements", r.elements);
    ranks += (ranks.size() > 1 ? "," : "") + o.str();
  }
  JsonObject o;
  o.add("format", "zerotrain checkpoint")
      .add("version", kMetaVersion)
      .add("step", m.step)
      .add("world", m.world)
      .add("stage", m.stage)
      .add("model", model)
      .add("params", m.params)
      .add("padded_params", m.padded_params)
      .add("state_dtype", "fp32")
      .add("state_arrays", "master, m, v")
      .add("model_dtype", m.model_dtype)
      .add("device", m.device)
      .add("tokenizer", tokenizer)
      .add("config_yaml", file_json(m.config_yaml))
      .raw("ranks", ranks + "]")
      .raw("config", m.config_json.empty() ? "null" : m.config_json);
  return o.str() + "\n";
}

CheckpointMeta parse_meta(const std::string& text, const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    bad(path, "not valid JSON (line " + std::to_string(e.mark.line + 1) + "): " + e.msg);
  }
  if (!root.IsMap()) bad(path, "expected a JSON object at the top level");
  const MetaReader r(root, path);
  if (r.text(root, "format") != "zerotrain checkpoint")
    bad(path,
        "field 'format': expected 'zerotrain checkpoint', got '" + r.text(root, "format") + "'");
  const int64_t version = r.integer(root, "version", 0, INT32_MAX);
  if (version != kMetaVersion)
    bad(path, "checkpoint metadata version " + std::to_string(version) + ", this build reads " +
                  std::to_string(kMetaVersion));
  CheckpointMeta m;
  m.step = r.integer(root, "step", 0, INT64_MAX);
  m.world = static_cast<int>(r.integer(root, "world", 1, 1 << 20));
  m.stage = static_cast<int>(r.integer(root, "stage", 0, 3));
  const YAML::Node model = r.node(root, "model", "");
  m.model.n_layer = static_cast<int>(r.integer(model, "n_layer", 1, INT32_MAX, "model."));
  m.model.n_head = static_cast<int>(r.integer(model, "n_head", 1, INT32_MAX, "model."));
  m.model.n_embd = static_cast<int>(r.integer(model, "n_embd", 1, INT32_MAX, "model."));
  m.model.vocab_size = static_cast<int>(r.integer(model, "vocab_size", 1, INT32_MAX, "model."));
  m.model.seq_len = static_cast<int>(r.integer(model, "seq_len", 1, INT32_MAX, "model."));
  m.params = static_cast<uint64_t>(r.integer(root, "params", 1, INT64_MAX));
  m.padded_params = static_cast<uint64_t>(r.integer(root, "padded_params", 0, INT64_MAX));
  if (r.text(root, "state_dtype") != "fp32")
    bad(path, "field 'state_dtype': expected 'fp32', got '" + r.text(root, "state_dtype") + "'");
  m.model_dtype = r.text(root, "model_dtype");
  m.device = r.text(root, "device");
  const YAML::Node tok = r.node(root, "tokenizer", "");
  m.tokenizer.name = r.text(tok, "name", "tokenizer.");
  if (tok["crc32"]) {
    m.tokenizer.has_digest = true;
    m.tokenizer.bytes = static_cast<uint64_t>(r.integer(tok, "bytes", 0, INT64_MAX, "tokenizer."));
    m.tokenizer.crc32 = r.crc(tok, "crc32", "tokenizer.");
  }
  m.config_yaml = r.file(r.node(root, "config_yaml", ""), "config_yaml");
  if (m.config_yaml.name != "config.yaml")
    bad(path, "field 'config_yaml.name': expected 'config.yaml', got '" + m.config_yaml.name + "'");

  if (m.model.n_embd % m.model.n_head != 0)
    bad(path, "model.n_embd " + std::to_string(m.model.n_embd) + " is not a multiple of n_head " +
                  std::to_string(m.model.n_head));
  const uint64_t expected_params = gpt_param_count(m.model);
  if (expected_params != m.params)
    bad(path, "field 'params' is " + std::to_string(m.params) + ", but the model shape has " +
                  std::to_string(expected_params) + " parameters");

  const YAML::Node ranks = r.node(root, "ranks", "");
  if (!ranks.IsSequence() || ranks.size() != static_cast<size_t>(m.world))
    bad(path, "field 'ranks': expected a list of " + std::to_string(m.world) +
                  " entries (one per rank of 'world')");
  uint64_t elements = 0;
  for (int i = 0; i < m.world; i++) {
    const std::string where = "ranks[" + std::to_string(i) + "]";
    RankRecord rec;
    rec.file = r.file(ranks[i], where);
    if (rec.file.name != rank_file_name(i))
      bad(path, "field '" + where + ".name': expected '" + rank_file_name(i) + "', got '" +
                    rec.file.name + "'");
    rec.pieces = static_cast<uint64_t>(r.integer(ranks[i], "pieces", 0, INT64_MAX, where + "."));
    rec.elements =
        static_cast<uint64_t>(r.integer(ranks[i], "elements", 0, INT64_MAX, where + "."));
    const bool fits = rec.pieces <= rec.file.bytes / kPieceEntryBytes &&
                      rec.elements <= rec.file.bytes / kStateBytesPerElement;
    if (!fits || rec.file.bytes != kRankHeaderBytes + kPieceEntryBytes * rec.pieces +
                                       kStateBytesPerElement * rec.elements)
      bad(path, "field '" + where + "': " + std::to_string(rec.file.bytes) + " bytes cannot hold " +
                    std::to_string(rec.pieces) + " pieces of " + std::to_string(rec.elements) +
                    " elements in all");
    elements += rec.elements;
    if (elements > m.params) break;
    m.ranks.push_back(rec);
  }
  if (elements != m.params)
    bad(path, "the ranks' files hold " + std::to_string(elements) +
                  " elements, but the model has " + std::to_string(m.params) + " parameters");
  return m;
}

std::string encode_complete(const FileRecord& meta_json) {
  return meta_json.name + " " + std::to_string(meta_json.bytes) + " " + crc32_hex(meta_json.crc32) +
         "\n";
}

FileRecord parse_complete(const std::string& text, const std::string& path) {
  if (text == "ok\n")
    bad(path,
        "a checkpoint of format ZTCKPT01, written before checkpoints carried checksums: it "
        "cannot be verified and is not loaded");
  // Exactly "meta.json BYTES CRC32\n": decimal digits, 8 lowercase hex digits.
  const size_t a = text.find(' '), b = a == std::string::npos ? a : text.find(' ', a + 1);
  const std::string bytes = b == std::string::npos ? "" : text.substr(a + 1, b - a - 1);
  const std::string hex = b == std::string::npos ? "" : text.substr(b + 1);
  const bool ok = text.compare(0, a, "meta.json") == 0 && a == 9 && !bytes.empty() &&
                  bytes.size() <= 18 &&
                  bytes.find_first_not_of("0123456789") == std::string::npos && hex.size() == 9 &&
                  hex.back() == '\n' && hex.find_first_not_of("0123456789abcdef") == 8;
  if (!ok)
    bad(path, "expected one line 'meta.json BYTES CRC32' (as this zerotrain writes it), got '" +
                  text.substr(0, std::min<size_t>(text.find('\n'), 40)) + "'");
  FileRecord r;
  r.name = "meta.json";
  r.bytes = std::strtoull(bytes.c_str(), nullptr, 10);
  r.crc32 = static_cast<uint32_t>(std::strtoul(hex.c_str(), nullptr, 16));
  return r;
}

}  // namespace zt
