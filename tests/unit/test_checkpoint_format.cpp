// The checkpoint's bytes (train/io/checkpoint_format.h): every field of a rank
// file, meta.json and COMPLETE is written and read back, and every kind of
// corruption is rejected with one line naming the file, before anything large
// is allocated.
#include <sys/stat.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "data/shard.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "train/io/checkpoint_format.h"

namespace zt {
namespace {

struct RankFile {
  RankFileHeader header;
  std::string bytes;  // the whole file
};

// A rank file with random pieces and random state, as save_checkpoint lays it out.
RankFile random_rank_file(std::mt19937_64& rng) {
  RankFile f;
  f.header.step = static_cast<int64_t>(rng() % 1000000);
  f.header.world = 1 + static_cast<int32_t>(rng() % 64);
  f.header.rank = static_cast<int32_t>(rng() % f.header.world);
  std::string data;
  uint64_t at = rng() % 1000;
  const int n_pieces = 1 + static_cast<int>(rng() % 6);
  for (int i = 0; i < n_pieces; i++) {
    const uint64_t n = 1 + rng() % 40;
    f.header.pieces.push_back({at, n});
    at += n + rng() % 5;
    for (uint64_t j = 0; j < 3 * n; j++) {
      const float x = static_cast<float>(static_cast<int64_t>(rng() % 20001) - 10000) / 997.0f;
      data.append(reinterpret_cast<const char*>(&x), 4);
    }
  }
  f.header.data_bytes = data.size();
  f.header.data_crc = crc32_of(data.data(), data.size());
  f.bytes = encode_rank_header(f.header) + data;
  return f;
}

// The one-line DataError of reading and verifying `path` as a rank file.
std::string rank_file_error(const std::string& path) {
  const std::string message = error_of<DataError>([&] {
    const InputFile f(path, "checkpoint shard");
    verify_rank_data(f, read_rank_header(f));
  });
  if (message.empty()) return "(no error)";
  INFO(message);
  CHECK(message.rfind(path + ": ", 0) == 0);
  CHECK(message.find('\n') == std::string::npos);
  return message;
}

template <typename T>
void poke(std::string& bytes, size_t offset, T value) {
  std::memcpy(&bytes[offset], &value, sizeof value);
}

CheckpointMeta random_meta(std::mt19937_64& rng) {
  CheckpointMeta m;
  m.step = static_cast<int64_t>(rng() % 100000);
  m.world = 1 + static_cast<int>(rng() % 5);
  m.stage = static_cast<int>(rng() % 4);
  const int n_layer = 1 + static_cast<int>(rng() % 4);
  const int n_embd = 8 * (1 + static_cast<int>(rng() % 4));
  const int vocab_size = 50 + static_cast<int>(rng() % 50);
  m.model = gpt_shape(n_layer, 2, n_embd, vocab_size, 4 + static_cast<int>(rng() % 30));
  m.params = gpt_param_count(m.model);
  m.padded_params = m.params + rng() % 100;
  m.model_dtype = rng() % 2 ? "fp32" : "bf16";
  m.device = rng() % 2 ? "cpu" : "cuda";
  m.tokenizer.name = rng() % 2 ? "byte" : "data/tok.model";
  if (m.tokenizer.name != "byte") {
    m.tokenizer.has_digest = true;
    m.tokenizer.bytes = rng() % 100000;
    m.tokenizer.crc32 = static_cast<uint32_t>(rng());
  }
  m.config_yaml = {"config.yaml", rng() % 5000, static_cast<uint32_t>(rng())};
  uint64_t left = m.params;
  for (int r = 0; r < m.world; r++) {
    const uint64_t elements = r + 1 == m.world ? left : rng() % (left + 1);
    left -= elements;
    const uint64_t pieces = 1 + rng() % 30;
    m.ranks.push_back({{rank_file_name(r), kRankHeaderBytes + 16 * pieces + 12 * elements,
                        static_cast<uint32_t>(rng())},
                       pieces,
                       elements});
  }
  m.config_json = "{\"train\":{\"steps\":3}}";
  return m;
}

std::string meta_error(const std::string& text) {
  const std::string message = error_of<DataError>([&] { parse_meta(text, "CK/meta.json"); });
  if (message.empty()) return "(no error)";
  INFO(message);
  CHECK(message.rfind("CK/meta.json: ", 0) == 0);
  CHECK(message.find('\n') == std::string::npos);
  return message;
}

// `text` with the first occurrence of `from` replaced by `to` (which must exist).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("rank files: every header field and piece round-trips, CRCs included", "[checkpoint]") {
  std::mt19937_64 rng(test_seed() + 101);
  TestDir dir("zt_test_ckpt_format");
  for (int trial = 0; trial < 5; trial++) {
    const RankFile f = random_rank_file(rng);
    write_file(dir.file("rank.bin"), f.bytes);
    const InputFile in(dir.file("rank.bin"), "checkpoint shard");
    const RankFileHeader h = read_rank_header(in);
    CHECK(h.step == f.header.step);
    CHECK(h.world == f.header.world);
    CHECK(h.rank == f.header.rank);
    CHECK(h.data_bytes == f.header.data_bytes);
    CHECK(h.data_crc == f.header.data_crc);
    REQUIRE(h.pieces.size() == f.header.pieces.size());
    uint64_t offset = kRankHeaderBytes + 16 * h.pieces.size();
    for (size_t i = 0; i < h.pieces.size(); i++) {
      CHECK(h.pieces[i].flat_begin == f.header.pieces[i].flat_begin);
      CHECK(h.pieces[i].n == f.header.pieces[i].n);
      CHECK(piece_data_offsets(h)[i] == offset);
      offset += 12 * h.pieces[i].n;
    }
    CHECK(verify_rank_data(in, h) == crc32_of(f.bytes.data(), f.bytes.size()));
  }
}

TEST_CASE("rank files: every corruption is rejected naming the file", "[checkpoint]") {
  std::mt19937_64 rng(test_seed() + 102);
  TestDir dir("zt_test_ckpt_format");
  const std::string path = dir.file("rank_00000.bin");
  const RankFile good = random_rank_file(rng);
  const size_t table_end = kRankHeaderBytes + 16 * good.header.pieces.size();
  struct Case {
    const char* what;
    std::function<void(std::string&)> corrupt;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"cut inside the header", [](std::string& b) { b.resize(47); }, "shorter than its 48-byte"},
      {"the old format", [](std::string& b) { b[7] = '1'; }, "ZTCKPT01"},
      {"another magic", [](std::string& b) { b[0] = 'X'; }, "not a zerotrain checkpoint shard"},
      {"piece count with bit 40 set",
       [](std::string& b) { poke<int64_t>(b, 24, int64_t(1) << 40); }, "does not fit the file"},
      {"negative piece count", [](std::string& b) { poke<int64_t>(b, 24, -3); },
       "does not fit the file"},
      {"data size field", [](std::string& b) { poke<uint64_t>(b, 32, uint64_t(1) << 62); },
       "data bytes"},
      {"a flipped bit in the piece table", [](std::string& b) { b[kRankHeaderBytes + 3] ^= 4; },
       "header checksum mismatch"},
      {"a flipped bit in the step", [](std::string& b) { b[9] ^= 1; }, "header checksum mismatch"},
      {"a flipped bit in the data",
       [&](std::string& b) { b[table_end + rng() % (b.size() - table_end)] ^= 0x10; },
       "data checksum mismatch"},
      {"a changed data CRC field", [](std::string& b) { b[41] ^= 1; }, "header checksum mismatch"},
      {"trailing bytes", [](std::string& b) { b += "junk"; }, "data bytes"},
      {"truncated data", [](std::string& b) { b.resize(b.size() - 12); }, "data bytes"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    std::string bytes = good.bytes;
    c.corrupt(bytes);
    write_file(path, bytes);
    CHECK(rank_file_error(path).find(c.expected) != std::string::npos);
  }

  // A table whose own CRC is right but whose pieces need more data than there is.
  RankFileHeader lying = good.header;
  lying.pieces.back().n += uint64_t(1) << 50;
  write_file(path, encode_rank_header(lying) + good.bytes.substr(table_end));
  CHECK(rank_file_error(path).find("runs past the data section") != std::string::npos);
  lying = good.header;
  lying.pieces.back().n -= 1;
  write_file(path, encode_rank_header(lying) + good.bytes.substr(table_end));
  CHECK(rank_file_error(path).find("12 per element") != std::string::npos);

  // Not a regular file: refused without blocking.
  HangGuard guard(120);
  REQUIRE(::mkfifo(dir.file("fifo.bin").c_str(), 0644) == 0);
  CHECK(rank_file_error(dir.file("fifo.bin")).find("named pipe") != std::string::npos);
  CHECK(rank_file_error(dir.path).find("a directory") != std::string::npos);
}

TEST_CASE("meta.json: every field round-trips", "[checkpoint]") {
  std::mt19937_64 rng(test_seed() + 103);
  for (int trial = 0; trial < 5; trial++) {
    const CheckpointMeta m = random_meta(rng);
    const CheckpointMeta r = parse_meta(encode_meta(m), "meta.json");
    CHECK(r.step == m.step);
    CHECK(r.world == m.world);
    CHECK(r.stage == m.stage);
    CHECK(r.model.n_layer == m.model.n_layer);
    CHECK(r.model.n_head == m.model.n_head);
    CHECK(r.model.n_embd == m.model.n_embd);
    CHECK(r.model.vocab_size == m.model.vocab_size);
    CHECK(r.model.seq_len == m.model.seq_len);
    CHECK(r.params == m.params);
    CHECK(r.padded_params == m.padded_params);
    CHECK(r.model_dtype == m.model_dtype);
    CHECK(r.device == m.device);
    CHECK(r.tokenizer.name == m.tokenizer.name);
    CHECK(r.tokenizer.has_digest == m.tokenizer.has_digest);
    CHECK(r.tokenizer.bytes == m.tokenizer.bytes);
    CHECK(r.tokenizer.crc32 == m.tokenizer.crc32);
    CHECK(r.config_yaml.name == m.config_yaml.name);
    CHECK(r.config_yaml.bytes == m.config_yaml.bytes);
    CHECK(r.config_yaml.crc32 == m.config_yaml.crc32);
    REQUIRE(r.ranks.size() == m.ranks.size());
    for (size_t i = 0; i < r.ranks.size(); i++) {
      CHECK(r.ranks[i].file.name == m.ranks[i].file.name);
      CHECK(r.ranks[i].file.bytes == m.ranks[i].file.bytes);
      CHECK(r.ranks[i].file.crc32 == m.ranks[i].file.crc32);
      CHECK(r.ranks[i].pieces == m.ranks[i].pieces);
      CHECK(r.ranks[i].elements == m.ranks[i].elements);
    }
  }
}

TEST_CASE("meta.json: non-numeric, out-of-range, missing and inconsistent fields", "[checkpoint]") {
  std::mt19937_64 rng(test_seed() + 104);
  CheckpointMeta m = random_meta(rng);
  m.step = 8;
  m.world = 2;
  m.ranks.clear();
  for (int r = 0; r < 2; r++) {
    const uint64_t elements = r == 0 ? m.params / 2 : m.params - m.params / 2;
    m.ranks.push_back(
        {{rank_file_name(r), kRankHeaderBytes + 16 * 5 + 12 * elements, 77}, 5, elements});
  }
  const std::string good = encode_meta(m);
  REQUIRE(meta_error(good) == "(no error)");
  struct Case {
    std::string text, expected;
  };
  const std::string crc = crc32_hex(m.config_yaml.crc32);
  const std::vector<Case> cases = {
      {replaced(good, "\"step\":8", "\"step\":\"eight\""), "field 'step': expected an integer"},
      {replaced(good, "\"step\":8", "\"step\":-8"), "field 'step'"},
      {replaced(good, "\"step\":8", "\"step\":99999999999999999999"), "field 'step'"},
      {replaced(good, "\"step\":8", "\"step\":8.5"), "field 'step'"},
      {replaced(good, "\"step\":8", "\"step\":[8]"), "got a list"},
      {replaced(good, "\"step\":8,", ""), "missing field 'step'"},
      {replaced(good, "\"world\":2", "\"world\":1099511627776"), "field 'world'"},
      {replaced(good, "\"world\":2", "\"world\":3"), "field 'ranks': expected a list of 3"},
      {replaced(good, "\"stage\":" + std::to_string(m.stage), "\"stage\":4"), "field 'stage'"},
      {replaced(good, "\"n_layer\":", "\"n_layer\":1"), "parameters"},
      {replaced(good, "\"n_embd\":", "\"n_embd\":x"), "field 'model.n_embd'"},
      {replaced(good, "\"crc32\":\"" + crc, "\"crc32\":\"zz"), "field 'config_yaml.crc32'"},
      {replaced(good, "rank_00001.bin", "rank_00007.bin"), "field 'ranks[1].name'"},
      {replaced(good, "\"elements\":" + std::to_string(m.ranks[1].elements),
                "\"elements\":" + std::to_string(uint64_t(1) << 40)),
       "bytes cannot hold"},
      {replaced(good, "\"state_dtype\":\"fp32\"", "\"state_dtype\":\"bf16\""),
       "field 'state_dtype'"},
      {replaced(good, "\"version\":2", "\"version\":1"), "metadata version 1"},
      {good.substr(0, good.size() / 2), "not valid JSON"},
      {"[1, 2]", "expected a JSON object"},
      // Found by fuzz/targets/checkpoint_meta: yaml-cpp's own exception for a
      // key looked up in a scalar.
      {replaced(good, "\"model\":{", "\"model\":3,\"unused\":{"),
       "field 'model': expected an object, got a scalar"},
      {replaced(good, "\"tokenizer\":{", "\"tokenizer\":\"byte\",\"unused\":{"),
       "field 'tokenizer': expected an object, got a scalar"},
      // Found there too: a multi-line scalar quoted in the message, and
      // yaml-cpp's message quoting a newline raw (meta_error checks one line).
      {replaced(good, "\"format\":\"zerotrain checkpoint\"", "\"format\":\"zero\n\n\nthing\""),
       "got 'zero\\x0a\\x0athing'"},
      {std::string("\0\r\0\0\0\n\nN", 8),
       "not valid JSON (line 2): unknown escape character: \\x0a"},
  };
  for (const Case& c : cases) {
    const std::string error = meta_error(c.text);
    INFO(c.text << "\n -> " << error);
    CHECK(error.find(c.expected) != std::string::npos);
  }
}

TEST_CASE("COMPLETE: round trip and rejected forms", "[checkpoint]") {
  std::mt19937_64 rng(test_seed() + 105);
  const FileRecord rec{"meta.json", rng() % 100000, static_cast<uint32_t>(rng())};
  const FileRecord back = parse_complete(encode_complete(rec), "CK/COMPLETE");
  CHECK(back.name == rec.name);
  CHECK(back.bytes == rec.bytes);
  CHECK(back.crc32 == rec.crc32);
  require_parts(error_of<DataError>([] { parse_complete("ok\n", "CK/COMPLETE"); }),
                {"CK/COMPLETE: a checkpoint of format ZTCKPT01"});
  for (const std::string bad :
       {"meta.json 12 0000000g\n", "meta.json -12 00000000\n", "meta.json 12 00000000",
        "meta.json 12 00000000\nmore\n", "rank.bin 12 00000000\n", ""}) {
    INFO("'" << bad << "'");
    CHECK_THROWS_AS(parse_complete(bad, "CK/COMPLETE"), DataError);
  }
}

}  // namespace zt
