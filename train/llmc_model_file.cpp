#include "train/llmc_model_file.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include "model/host_floats.h"

namespace zt {
namespace {

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

void read_header(std::ifstream& in, const std::string& path, int32_t h[256]) {
  in.read(reinterpret_cast<char*>(h), 256 * sizeof(int32_t));
  if (!in) throw std::runtime_error(path + ": too short for an llm.c model header (1024 bytes)");
  if (h[0] != 20240326)
    throw std::runtime_error(path + ": bad magic " + std::to_string(h[0]) +
                             " (an llm.c model file has 20240326)");
  if (h[1] != 3 && h[1] != 5)
    throw std::runtime_error(path + ": unsupported version " + std::to_string(h[1]) +
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
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw std::runtime_error(path + ": cannot write model file");
  bool ok = std::fwrite(h, sizeof h, 1, f) == 1;
  for (int i : file_order(table)) {
    const ParamInfo& p = table.params()[i];
    ok = ok && std::fwrite(flat.data() + p.offset, sizeof(float), p.numel, f) == p.numel;
  }
  ok = ok && std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  std::fclose(f);
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": write failed");
  }
}

std::vector<float> read_llmc_model(const std::string& path, const ParamTable& table) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open model file");
  int32_t h[256];
  read_header(in, path, h);
  const GPTConfig& c = table.config();
  const int want[5] = {c.seq_len, c.n_layer, c.n_head, c.n_embd, c.vocab_size};
  const int got[5] = {h[2], h[4], h[5], h[6], h[7]};
  const char* names[5] = {"model.seq_len", "model.n_layer", "model.n_head", "model.n_embd",
                          "model.vocab_size (padded)"};
  for (int i = 0; i < 5; i++)
    if (want[i] != got[i])
      throw std::runtime_error(path + ": " + names[i] + " is " + std::to_string(got[i]) +
                               " in the file but " + std::to_string(want[i]) + " in the config");
  std::vector<float> flat(table.total());
  const bool bf16 = h[1] == 5;
  for (int i : file_order(table)) {
    const ParamInfo& p = table.params()[i];
    if (bf16) {
      std::vector<uint16_t> raw(p.numel);
      in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(p.numel * 2));
      for (size_t j = 0; j < p.numel; j++) flat[p.offset + j] = bf16_to_float(raw[j]);
    } else {
      in.read(reinterpret_cast<char*>(flat.data() + p.offset),
              static_cast<std::streamsize>(p.numel * 4));
    }
    if (!in) throw std::runtime_error(path + ": truncated at tensor " + p.name);
  }
  return flat;
}

}  // namespace zt
