#include "train/io/llmc_model_file.h"

#include <cstdint>

#include "data/input/input_file.h"
#include "data/shard.h"
#include "model/host_floats.h"
#include "train/io/atomic_file.h"

namespace zt {
namespace {

constexpr uint64_t kHeaderBytes = 256 * sizeof(int32_t);

// llm.c's order of kinds; per-layer kinds are stored for all layers consecutively.
std::vector<int> file_order(const ParamTable& t) {
  std::vector<int> order;
  const int L = t.config().n_layer;
  order.push_back(0);  // wte
  order.push_back(1);  // wpe
  for (int k = 0; k < kNumBlockParams; k++)
    for (int l = 0; l < L; l++) order.push_back(t.block_param(l, static_cast<BlockParam>(k)));
  const int f = t.units()[t.final_unit()].first_param;
  order.push_back(f);
  order.push_back(f + 1);
  return order;
}

void check_header(const std::string& path, const int32_t h[256]) {
  if (h[0] != 20240326)
    throw DataError(path + ": bad magic " + std::to_string(h[0]) +
                    " (an llm.c model file has 20240326)");
  if (h[1] != 3 && h[1] != 5)
    throw DataError(path + ": unsupported version " + std::to_string(h[1]) +
                    " (expected 3 = fp32 or 5 = bf16)");
}

}  // namespace

void write_llmc_model(const std::string& path, const ParamTable& table,
                      const std::vector<float>& flat) {
  const GPTConfig& c = table.config();
  int32_t h[256] = {};
  h[0] = 20240326;
  h[1] = 3;
  h[2] = c.seq_len;
  h[3] = c.vocab_size;
  h[4] = c.n_layer;
  h[5] = c.n_head;
  h[6] = c.n_embd;
  h[7] = c.vocab_size;
  AtomicFile f(path);
  f.write(h, sizeof h);
  for (int i : file_order(table)) {
    const ParamInfo& p = table.params()[i];
    f.write(flat.data() + p.offset, p.numel * sizeof(float));
  }
  f.commit();
}

std::vector<float> read_llmc_model(const std::string& path, const ParamTable& table) {
  const InputFile in(path, "model file");
  if (in.size() < kHeaderBytes)
    throw DataError(path + ": " + std::to_string(in.size()) +
                    " bytes, too short for an llm.c model header (1024 bytes)");
  int32_t h[256];
  in.read_at(0, h, sizeof h);
  check_header(path, h);
  const GPTConfig& c = table.config();
  const int want[5] = {c.seq_len, c.n_layer, c.n_head, c.n_embd, c.vocab_size};
  const int got[5] = {h[2], h[4], h[5], h[6], h[7]};
  const char* names[5] = {"model.seq_len", "model.n_layer", "model.n_head", "model.n_embd",
                          "model.vocab_size (padded)"};
  for (int i = 0; i < 5; i++)
    if (want[i] != got[i])
      throw DataError(path + ": " + names[i] + " is " + std::to_string(got[i]) +
                      " in the file but " + std::to_string(want[i]) + " in the config");
  const bool bf16 = h[1] == 5;
  const uint64_t expected = kHeaderBytes + table.total() * (bf16 ? 2 : 4);
  if (in.size() != expected)
    throw DataError(path + ": " + std::to_string(in.size()) + " bytes, but a version " +
                    std::to_string(h[1]) + " file of this shape has " + std::to_string(expected) +
                    " (1024-byte header + " + std::to_string(table.total()) + " parameters x " +
                    (bf16 ? "2" : "4") + " bytes)");
  std::vector<float> flat(table.total());
  uint64_t at = kHeaderBytes;
  for (int i : file_order(table)) {
    const ParamInfo& p = table.params()[i];
    if (bf16) {
      std::vector<uint16_t> raw(p.numel);
      in.read_at(at, raw.data(), p.numel * 2);
      for (size_t j = 0; j < p.numel; j++) flat[p.offset + j] = bf16_to_float(raw[j]);
      at += p.numel * 2;
    } else {
      in.read_at(at, flat.data() + p.offset, p.numel * 4);
      at += p.numel * 4;
    }
  }
  return flat;
}

}  // namespace zt
