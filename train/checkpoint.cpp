#include "train/checkpoint.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "train/json_writer.h"
#include "train/runtime.h"

namespace zt {
namespace {

constexpr char kMagic[8] = {'Z', 'T', 'C', 'K', 'P', 'T', '0', '1'};

std::string step_name(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step_%08lld", static_cast<long long>(step));
  return buf;
}

std::string rank_file(const std::string& dir, int r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "/rank_%05d.bin", r);
  return dir + buf;
}

void fsync_path(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
}

void write_file_synced(const std::string& path, const std::string& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() || std::fflush(f) != 0)
    throw std::runtime_error(path + ": cannot write checkpoint file");
  fsync(fileno(f));
  std::fclose(f);
}

void remove_tree(const std::string& dir) {
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") std::remove((dir + "/" + n).c_str());
    }
    closedir(d);
  }
  rmdir(dir.c_str());
}

std::vector<std::string> complete_checkpoints(const std::string& run_dir) {
  std::vector<std::string> out;
  const std::string root = run_dir + "/checkpoints";
  if (DIR* d = opendir(root.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.rfind("step_", 0) == 0 && n.find('.') == std::string::npos &&
          access((root + "/" + n + "/COMPLETE").c_str(), F_OK) == 0)
        out.push_back(root + "/" + n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct FilePiece {
  uint64_t flat_begin, n, data_offset;  // data_offset: byte offset of its master block
};

struct ShardFile {
  std::string path;
  std::vector<FilePiece> pieces;
};

ShardFile read_piece_table(const std::string& path) {
  ShardFile sf{path, {}};
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": checkpoint shard missing or unreadable");
  char magic[8];
  int64_t step = 0, n_pieces = 0;
  int32_t world = 0, rank = 0;
  in.read(magic, 8);
  in.read(reinterpret_cast<char*>(&step), 8);
  in.read(reinterpret_cast<char*>(&world), 4);
  in.read(reinterpret_cast<char*>(&rank), 4);
  in.read(reinterpret_cast<char*>(&n_pieces), 8);
  if (!in || std::memcmp(magic, kMagic, 8) != 0 || n_pieces < 0)
    throw std::runtime_error(path + ": not a zerotrain checkpoint shard (bad header)");
  uint64_t offset = 32 + 16 * static_cast<uint64_t>(n_pieces);
  for (int64_t i = 0; i < n_pieces; i++) {
    uint64_t fb = 0, n = 0;
    in.read(reinterpret_cast<char*>(&fb), 8);
    in.read(reinterpret_cast<char*>(&n), 8);
    sf.pieces.push_back({fb, n, offset});
    offset += 3 * n * sizeof(float);
  }
  if (!in) throw std::runtime_error(path + ": truncated checkpoint shard");
  return sf;
}

// Copies [b, e) of array k (0 master, 1 m, 2 v) from every file piece overlapping it.
void read_range(const std::vector<ShardFile>& files, uint64_t b, uint64_t e, int k, float* out) {
  uint64_t covered = 0;
  for (const ShardFile& f : files) {
    std::ifstream in(f.path, std::ios::binary);
    for (const FilePiece& p : f.pieces) {
      const uint64_t lo = std::max(b, p.flat_begin), hi = std::min(e, p.flat_begin + p.n);
      if (lo >= hi) continue;
      in.seekg(static_cast<std::streamoff>(p.data_offset + (k * p.n + (lo - p.flat_begin)) * 4));
      in.read(reinterpret_cast<char*>(out + (lo - b)), static_cast<std::streamsize>((hi - lo) * 4));
      if (!in) throw std::runtime_error(f.path + ": truncated checkpoint shard");
      covered += hi - lo;
    }
  }
  if (covered != e - b)
    throw std::runtime_error("checkpoint does not cover parameters [" + std::to_string(b) + ", " +
                             std::to_string(e) + ")");
}

std::vector<ShardFile> read_all_tables(const std::string& dir) {
  CheckpointMeta meta = read_checkpoint_meta(dir);
  std::vector<ShardFile> files;
  for (int r = 0; r < meta.world; r++) files.push_back(read_piece_table(rank_file(dir, r)));
  return files;
}

}  // namespace

void save_checkpoint(const std::string& run_dir, int64_t step, ZeroEngine& engine,
                     const Config& cfg, const std::string& config_yaml, int rank, int world) {
  const std::string root = run_dir + "/checkpoints";
  const std::string final_dir = root + "/" + step_name(step);
  const std::string tmp = final_dir + ".tmp";
  if (rank == 0) {
    mkdir(root.c_str(), 0755);
    remove_tree(tmp);
    if (mkdir(tmp.c_str(), 0755) != 0) throw std::runtime_error(tmp + ": cannot create directory");
  }
  barrier_all();

  std::vector<float> master, m, v;
  engine.optimizer().save_state(master, m, v);
  const auto& pieces = engine.optimizer().pieces();
  std::string bytes(kMagic, 8);
  auto put = [&](const void* p, size_t n) { bytes.append(static_cast<const char*>(p), n); };
  const int64_t n_pieces = static_cast<int64_t>(pieces.size());
  const int32_t w32 = world, r32 = rank;
  put(&step, 8);
  put(&w32, 4);
  put(&r32, 4);
  put(&n_pieces, 8);
  for (const OptimPiece& p : pieces) {
    const uint64_t fb = p.flat_begin, n = p.n;
    put(&fb, 8);
    put(&n, 8);
  }
  for (const OptimPiece& p : pieces)
    for (const std::vector<float>* a : {&master, &m, &v}) put(a->data() + p.shard_offset, p.n * 4);
  write_file_synced(rank_file(tmp, rank), bytes);
  barrier_all();

  if (rank == 0) {
    JsonObject meta;
    meta.add("step", step).add("world", world).add("stage", engine.stage());
    write_file_synced(tmp + "/config.yaml", config_yaml);
    write_file_synced(tmp + "/meta.json", meta.str() + "\n");
    remove_tree(final_dir);
    if (std::rename(tmp.c_str(), final_dir.c_str()) != 0)
      throw std::runtime_error(final_dir + ": cannot rename the finished checkpoint into place");
    fsync_path(root);
    write_file_synced(final_dir + "/COMPLETE", "ok\n");
    fsync_path(final_dir);
    auto all = complete_checkpoints(run_dir);
    for (size_t i = 0; i + cfg.train.keep_checkpoints < all.size(); i++) remove_tree(all[i]);
  }
  barrier_all();
}

std::string latest_checkpoint(const std::string& run_dir) {
  auto all = complete_checkpoints(run_dir);
  return all.empty() ? "" : all.back();
}

CheckpointMeta read_checkpoint_meta(const std::string& dir) {
  if (access((dir + "/COMPLETE").c_str(), F_OK) != 0)
    throw std::runtime_error(dir + ": not a complete checkpoint (no COMPLETE marker)");
  std::ifstream in(dir + "/meta.json");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string s = ss.str();
  auto field = [&](const char* k) -> int64_t {
    const std::string key = std::string("\"") + k + "\":";
    size_t p = s.find(key);
    if (p == std::string::npos) throw std::runtime_error(dir + "/meta.json: missing '" + k + "'");
    return std::stoll(s.substr(p + key.size()));
  };
  CheckpointMeta m;
  m.step = field("step");
  m.world = static_cast<int>(field("world"));
  m.stage = static_cast<int>(field("stage"));
  return m;
}

void load_checkpoint(const std::string& dir, ZeroEngine& engine) {
  std::vector<ShardFile> files = read_all_tables(dir);
  const size_t shard = engine.optimizer().shard_size();
  std::vector<float> state[3] = {std::vector<float>(shard, 0.0f), std::vector<float>(shard, 0.0f),
                                 std::vector<float>(shard, 0.0f)};
  for (const OptimPiece& p : engine.optimizer().pieces())
    for (int k = 0; k < 3; k++)
      read_range(files, p.flat_begin, p.flat_begin + p.n, k, state[k].data() + p.shard_offset);
  engine.optimizer().load_state(state[0], state[1], state[2]);
  engine.refresh_params_from_master();
}

std::vector<float> read_checkpoint_weights(const std::string& dir, uint64_t total_params) {
  std::vector<ShardFile> files = read_all_tables(dir);
  std::vector<float> w(total_params, 0.0f);
  read_range(files, 0, total_params, 0, w.data());
  return w;
}

}  // namespace zt
