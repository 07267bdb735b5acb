// Writes the binary seeds of the fuzz corpora with the project's own writers,
// at fuzz time (fuzz/run.sh), so no binary files are committed:
//   OUT/shard/          a 16-bit and a 32-bit token shard
//   OUT/llmc_model_file/ an llm.c fp32 model file of the seed model
//   OUT/checkpoint_rank_file/ a world-1 rank file whose two pieces cover the seed model
//   OUT/checkpoint_meta/ its meta.json and a COMPLETE marker
//   OUT/tiktoken_vocab/ a byte-level BPE vocabulary of GPT-2's 50,256 ranks
// Each seed is read back by the parser it seeds, so a seed that no longer
// parses (a format changed) fails here rather than silently seeding nothing.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/gpt2_tokenizer.h"
#include "data/input/input_file.h"
#include "data/shard.h"
#include "fuzz/support/seed_model.h"
#include "model/param_table.h"
#include "train/io/checkpoint_format.h"
#include "train/io/llmc_model_file.h"

namespace fs = std::filesystem;

namespace {

void write_file(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
}

void write_shards(const fs::path& dir) {
  fs::create_directories(dir);
  std::vector<uint32_t> tokens;
  for (uint32_t i = 0; i < 64; i++) tokens.push_back((i * 7919) % 50257);
  zt::write_shard((dir / "u16.bin").string(), tokens, false);
  zt::write_shard((dir / "u32.bin").string(), tokens, true);
  (void)zt::read_shard((dir / "u32.bin").string(), 50257);
}

std::vector<float> seed_weights(size_t n) {
  std::vector<float> w(n);
  for (size_t i = 0; i < n; i++) w[i] = 0.01f * float(int(i % 200) - 100);
  return w;
}

void write_llmc_model_seed(const fs::path& dir) {
  fs::create_directories(dir);
  const zt::ParamTable table(zt::fuzz::seed_model());
  const std::string path = (dir / "fp32.bin").string();
  zt::write_llmc_model(path, table, seed_weights(table.total()));
  (void)zt::read_llmc_model(path, table);
}

// The rank file's bytes: two pieces splitting the seed model's parameters.
std::string rank_file(uint64_t params) {
  zt::RankFileHeader h;
  h.step = 3;
  h.world = 1;
  h.rank = 0;
  h.pieces = {{params / 2, params - params / 2}, {0, params / 2}};
  const std::vector<float> state = seed_weights(3 * params);
  const std::string data(reinterpret_cast<const char*>(state.data()), state.size() * 4);
  h.data_bytes = data.size();
  h.data_crc = zt::crc32_of(data.data(), data.size());
  return zt::encode_rank_header(h) + data;
}

void write_checkpoint_seeds(const fs::path& rank_dir, const fs::path& meta_dir) {
  zt::CheckpointMeta m;
  m.step = 3;
  m.world = 1;
  m.stage = 1;
  m.model = zt::fuzz::seed_model();
  m.params = zt::gpt_param_count(m.model);
  m.padded_params = m.params;
  m.model_dtype = "fp32";
  m.device = "cpu";
  m.tokenizer = zt::tokenizer_identity("byte");
  m.config_yaml = {"config.yaml", 12, 0x1234abcd};
  const std::string rank = rank_file(m.params);
  write_file(rank_dir / zt::rank_file_name(0), rank);
  (void)zt::read_rank_header(
      zt::InputFile((rank_dir / zt::rank_file_name(0)).string(), "checkpoint shard"));
  zt::RankRecord r;
  r.file = {zt::rank_file_name(0), rank.size(), zt::crc32_of(rank.data(), rank.size())};
  r.pieces = 2;
  r.elements = m.params;
  m.ranks.push_back(r);
  const std::string meta = zt::encode_meta(m);
  (void)zt::parse_meta(meta, "seed meta.json");
  write_file(meta_dir / "meta.json", meta);
  const std::string complete =
      zt::encode_complete({"meta.json", meta.size(), zt::crc32_of(meta.data(), meta.size())});
  (void)zt::parse_complete(complete, "seed COMPLETE");
  write_file(meta_dir / "COMPLETE", complete);
}

std::string base64(const std::string& bytes) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
    if (i + 1 < bytes.size()) v |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) v |= uint32_t(uint8_t(bytes[i + 2]));
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[v & 63] : '=';
  }
  return out;
}

// GPT-2's shape, not its merges: the 256 bytes, then distinct two- and
// three-byte strings up to rank 50,255, one "base64 rank" line each.
void write_tiktoken_seed(const fs::path& dir) {
  std::string text;
  int rank = 0;
  auto add = [&](const std::string& token) {
    text += base64(token) + " " + std::to_string(rank++) + "\n";
  };
  for (int b = 0; b < 256; b++) add(std::string(1, char(b)));
  for (int a = 32; a < 127 && rank < zt::Gpt2Tokenizer::kEndOfText; a++)
    for (int b = 0; b < 256 && rank < zt::Gpt2Tokenizer::kEndOfText; b++)
      add(std::string{char(a), char(b)});
  for (int a = 'a'; rank < zt::Gpt2Tokenizer::kEndOfText; a++)
    for (int b = 'a'; b <= 'z' && rank < zt::Gpt2Tokenizer::kEndOfText; b++)
      for (int c = 'a'; c <= 'z' && rank < zt::Gpt2Tokenizer::kEndOfText; c++)
        add(std::string{' ', char(a), char(b), char(c)});
  write_file(dir / "synthetic.tiktoken", text);
  (void)zt::Gpt2Tokenizer((dir / "synthetic.tiktoken").string());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds OUT_DIR\n");
    return 2;
  }
  const fs::path out = argv[1];
  try {
    write_shards(out / "shard");
    write_llmc_model_seed(out / "llmc_model_file");
    write_checkpoint_seeds(out / "checkpoint_rank_file", out / "checkpoint_meta");
    write_tiktoken_seed(out / "tiktoken_vocab");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
