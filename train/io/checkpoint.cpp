#include "train/io/checkpoint.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <stdexcept>

#include "data/shard.h"
#include "train/config/config.h"
#include "train/io/atomic_file.h"
#include "train/loop/runtime.h"

namespace zt {
namespace {

constexpr uint64_t kConfigYamlMaxBytes = 1 << 20;

std::string step_name(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step_%08lld", static_cast<long long>(step));
  return buf;
}

// The step of a checkpoint directory name "step_<digits>", or -1.
int64_t step_of(const std::string& name) {
  if (name.rfind("step_", 0) != 0 || name.size() < 6 || name.size() > 24) return -1;
  if (name.find_first_not_of("0123456789", 5) != std::string::npos) return -1;
  return std::strtoll(name.c_str() + 5, nullptr, 10);
}

void remove_tree(const std::string& dir) {
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n != "." && n != "..") std::remove((dir + "/" + n).c_str());
    }
    closedir(d);
  }
  rmdir(dir.c_str());
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) out.push_back(e->d_name);
    closedir(d);
  }
  return out;
}

// Every rank agrees on the first rank's error; then the temporary directory
// goes and every rank throws the same JobError.
void agree_or_throw(const std::string& error, const std::string& tmp, int rank) {
  const std::string first = first_error_over_ranks(error);
  if (first.empty()) return;
  if (rank == 0) remove_tree(tmp);
  throw JobError(first);
}

// The elements [begin, end) of the flat layout that piece `p` holds.
OptimPiece sub_piece(const OptimPiece& p, uint64_t begin, uint64_t end) {
  OptimPiece s = p;
  s.flat_begin = begin;
  s.layout_offset = p.layout_offset + (begin - p.flat_begin);
  s.shard_offset = p.shard_offset + (begin - p.flat_begin);
  s.n = end - begin;
  return s;
}

// The parts of this rank's pieces that no lower rank holds (stage 0 replicates
// the whole state on every rank: only rank 0 writes it; a grid's tensor ranks
// all hold the LayerNorms). Collective.
std::vector<OptimPiece> pieces_to_save(const std::vector<OptimPiece>& mine, int rank) {
  const std::vector<uint64_t> counts = allgather_u64({mine.size()});
  const uint64_t most = *std::max_element(counts.begin(), counts.end());
  std::vector<uint64_t> extents(2 * most, 0);
  for (size_t i = 0; i < mine.size(); i++) {
    extents[2 * i] = mine[i].flat_begin;
    extents[2 * i + 1] = mine[i].n;
  }
  const std::vector<uint64_t> all = allgather_u64(extents);
  std::vector<std::pair<uint64_t, uint64_t>> held;  // [begin, end) held by lower ranks
  for (int r = 0; r < rank; r++)
    for (uint64_t i = 0; i < most; i++) {
      const uint64_t b = all[(r * most + i) * 2], n = all[(r * most + i) * 2 + 1];
      if (n > 0) held.push_back({b, b + n});
    }
  std::sort(held.begin(), held.end());
  std::vector<std::pair<uint64_t, uint64_t>> lower;  // merged: disjoint, ascending
  for (const auto& x : held)
    if (!lower.empty() && x.first <= lower.back().second)
      lower.back().second = std::max(lower.back().second, x.second);
    else lower.push_back(x);
  std::vector<OptimPiece> out;
  for (const OptimPiece& p : mine) {
    uint64_t at = p.flat_begin;
    const uint64_t end = p.flat_begin + p.n;
    auto it = std::upper_bound(lower.begin(), lower.end(), std::make_pair(at, UINT64_MAX));
    if (it != lower.begin() && std::prev(it)->second > at) --it;
    for (; it != lower.end() && it->first < end; ++it) {
      if (it->first > at) out.push_back(sub_piece(p, at, it->first));
      at = std::max(at, it->second);
      if (at >= end) break;
    }
    if (at < end) out.push_back(sub_piece(p, at, end));
  }
  return out;
}

RankRecord write_rank_file(const std::string& path, int64_t step, int world, int rank,
                           const std::vector<OptimPiece>& pieces, ZeroEngine& engine) {
  std::vector<float> master, m, v;
  engine.optimizer().save_state(master, m, v);
  RankFileHeader h;
  h.step = step;
  h.world = world;
  h.rank = rank;
  uint64_t elements = 0;
  for (const OptimPiece& p : pieces) {
    h.pieces.push_back({p.flat_begin, p.n});
    for (const std::vector<float>* a : {&master, &m, &v})
      h.data_crc = crc32_of(a->data() + p.shard_offset, p.n * sizeof(float), h.data_crc);
    elements += p.n;
  }
  h.data_bytes = kStateBytesPerElement * elements;
  const std::string header = encode_rank_header(h);
  AtomicFile f(path);
  f.write(header);
  for (const OptimPiece& p : pieces)
    for (const std::vector<float>* a : {&master, &m, &v})
      f.write(a->data() + p.shard_offset, p.n * sizeof(float));
  f.commit();
  RankRecord rec;
  rec.file = {rank_file_name(rank), f.bytes_written(),
              crc32_concat(crc32_of(header.data(), header.size()), h.data_crc, h.data_bytes)};
  rec.pieces = pieces.size();
  rec.elements = elements;
  return rec;
}

// Keeps the newest `keep` complete checkpoints up to `step` and removes stale
// .tmp directories; checkpoints after `step` (a run resumed from an older one
// after a newer one was rejected) stay until this run rewrites them.
void prune(const std::string& run_dir, int64_t step, int keep) {
  std::vector<std::string> older;
  for (const std::string& dir : complete_checkpoints(run_dir))
    if (step_of(dir.substr(dir.find_last_of('/') + 1)) <= step) older.push_back(dir);
  for (size_t i = 0; i + static_cast<size_t>(keep) < older.size(); i++) remove_tree(older[i]);
  const std::string root = run_dir + "/checkpoints";
  for (const std::string& n : entries(root))
    if (n.rfind("step_", 0) == 0 && n.size() > 4 && n.compare(n.size() - 4, 4, ".tmp") == 0)
      remove_tree(root + "/" + n);
}

// A small checkpoint file, checked against the size and CRC-32 recorded for it.
std::string read_recorded(const std::string& dir, const FileRecord& rec, const std::string& by,
                          uint64_t max_bytes) {
  const std::string path = dir + "/" + rec.name;
  const std::string bytes = read_small_file(path, "checkpoint file", max_bytes);
  const uint32_t crc = crc32_of(bytes.data(), bytes.size());
  if (bytes.size() != rec.bytes || crc != rec.crc32)
    throw DataError(path + ": checksum mismatch (" + by + " records " + std::to_string(rec.bytes) +
                    " bytes, crc32 " + crc32_hex(rec.crc32) + "; the file has " +
                    std::to_string(bytes.size()) + " bytes, crc32 " + crc32_hex(crc) + ")");
  return bytes;
}

}  // namespace

std::vector<OptimPiece> whole_model_pieces(const std::vector<OptimPiece>& pieces,
                                           const std::vector<WholeRun>& part) {
  if (part.empty()) return pieces;
  std::vector<OptimPiece> out;
  for (const OptimPiece& p : pieces) {
    size_t at = p.flat_begin;
    const size_t end = p.flat_begin + p.n;
    auto run = std::upper_bound(part.begin(), part.end(), at,
                                [](size_t x, const WholeRun& r) { return x < r.part; });
    if (run == part.begin()) throw std::logic_error("whole_model_pieces: a piece before the part");
    for (--run; at < end; ++run) {
      if (run == part.end() || run->part > at || run->part + run->n <= at)
        throw std::logic_error("whole_model_pieces: a piece outside the part's layout");
      const size_t n = std::min(end, run->part + run->n) - at;
      OptimPiece s = p;
      s.flat_begin = run->whole + (at - run->part);
      s.layout_offset = p.layout_offset + (at - p.flat_begin);
      s.shard_offset = p.shard_offset + (at - p.flat_begin);
      s.n = n;
      out.push_back(s);
      at += n;
    }
  }
  return out;
}

void save_checkpoint(const CheckpointContext& c, int64_t step, ZeroEngine& engine, int rank,
                     int world) {
  const std::string root = c.run_dir + "/checkpoints";
  const std::string final_dir = root + "/" + step_name(step);
  const std::string tmp = final_dir + ".tmp";
  std::string error;
  if (rank == 0) {
    remove_tree(tmp);
    if (mkdir(root.c_str(), 0755) != 0 && errno != EEXIST)
      error = root + ": cannot create directory: " + std::strerror(errno);
    else if (mkdir(tmp.c_str(), 0755) != 0)
      error = tmp + ": cannot create directory: " + std::strerror(errno);
  }
  agree_or_throw(error, tmp, rank);

  const std::vector<OptimPiece> pieces =
      pieces_to_save(whole_model_pieces(engine.optimizer().pieces(), c.part), rank);
  RankRecord mine;
  try {
    mine = write_rank_file(tmp + "/" + rank_file_name(rank), step, world, rank, pieces, engine);
  } catch (const std::exception& e) {
    error = e.what();
  }
  agree_or_throw(error, tmp, rank);
  const std::vector<uint64_t> records =
      allgather_u64({mine.file.bytes, mine.file.crc32, mine.pieces, mine.elements});

  if (rank == 0) {
    bool renamed = false;
    try {
      CheckpointMeta meta;
      meta.step = step;
      meta.world = world;
      meta.stage = engine.stage();
      meta.model = c.model;
      meta.params = gpt_param_count(c.model);
      meta.padded_params = engine.padded_params();
      meta.model_dtype = c.model_dtype;
      meta.device = c.device;
      meta.tokenizer = c.tokenizer;
      meta.config_json = c.config_json;
      for (int r = 0; r < world; r++) {
        const uint64_t* x = records.data() + 4 * r;
        meta.ranks.push_back({{rank_file_name(r), x[0], static_cast<uint32_t>(x[1])}, x[2], x[3]});
      }
      write_file_atomic(tmp + "/config.yaml", c.config_yaml);
      meta.config_yaml = {"config.yaml", c.config_yaml.size(),
                          crc32_of(c.config_yaml.data(), c.config_yaml.size())};
      const std::string meta_text = encode_meta(meta);
      write_file_atomic(tmp + "/meta.json", meta_text);
      remove_tree(final_dir);
      if (std::rename(tmp.c_str(), final_dir.c_str()) != 0)
        throw IoError(final_dir + ": cannot rename the finished checkpoint into place: " +
                      std::strerror(errno));
      renamed = true;
      fsync_dir(root);
      write_file_atomic(final_dir + "/COMPLETE",
                        encode_complete({"meta.json", meta_text.size(),
                                         crc32_of(meta_text.data(), meta_text.size())}));
      prune(c.run_dir, step, c.keep);
    } catch (const std::exception& e) {
      error = e.what();
      if (renamed) remove_tree(final_dir);
    }
  }
  agree_or_throw(error, tmp, rank);
}

std::vector<std::string> complete_checkpoints(const std::string& run_dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  const std::string root = run_dir + "/checkpoints";
  for (const std::string& n : entries(root)) {
    const int64_t step = step_of(n);
    if (step >= 0 && access((root + "/" + n + "/COMPLETE").c_str(), F_OK) == 0)
      found.push_back({step, root + "/" + n});
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (const auto& f : found) out.push_back(f.second);
  return out;
}

CheckpointMeta read_checkpoint_meta(const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0)
    throw DataError(dir + ": no such checkpoint directory (" + std::strerror(errno) + ")");
  if (!S_ISDIR(st.st_mode))
    throw DataError(dir + ": not a checkpoint directory (it is " + file_type_name(st.st_mode) +
                    ")");
  if (access((dir + "/COMPLETE").c_str(), F_OK) != 0)
    throw DataError(dir + ": not a complete checkpoint (no COMPLETE marker)");
  const std::string complete_path = dir + "/COMPLETE";
  const FileRecord meta_rec = parse_complete(
      read_small_file(complete_path, "checkpoint marker", kCompleteMaxBytes), complete_path);
  const std::string meta_path = dir + "/meta.json";
  CheckpointMeta meta =
      parse_meta(read_recorded(dir, meta_rec, "COMPLETE", kMetaMaxBytes), meta_path);
  read_recorded(dir, meta.config_yaml, "meta.json", kConfigYamlMaxBytes);
  return meta;
}

void check_same_model(const std::string& dir, const CheckpointMeta& meta, const GPTConfig& model,
                      const TokenizerIdentity* tokenizer, const std::string& other) {
  const std::string lead = dir + ": ";
  const std::string why = " (these keys fix the meaning of the stored numbers)";
  const struct {
    const char* key;
    int saved, now;
  } keys[] = {{"model.n_layer", meta.model.n_layer, model.n_layer},
              {"model.n_head", meta.model.n_head, model.n_head},
              {"model.n_embd", meta.model.n_embd, model.n_embd},
              {"model.vocab_size", meta.model.vocab_size, model.vocab_size},
              {"model.seq_len", meta.model.seq_len, model.seq_len}};
  for (const auto& k : keys)
    if (k.saved != k.now)
      throw ConfigError(lead + k.key + " is " + std::to_string(k.saved) +
                        " in the checkpoint but " + std::to_string(k.now) + " in " + other + why);
  if (!tokenizer) return;
  const TokenizerIdentity& a = meta.tokenizer;
  const TokenizerIdentity& b = *tokenizer;
  const bool same_file = a.has_digest && b.has_digest && a.bytes == b.bytes && a.crc32 == b.crc32;
  if (a.name != b.name && !same_file)
    throw ConfigError(lead + "data.tokenizer is '" + a.name + "' in the checkpoint but '" + b.name +
                      "' in " + other + why);
  if (a.name == b.name && a.has_digest && b.has_digest && !same_file)
    throw ConfigError(lead + "data.tokenizer '" + a.name + "' has changed since the checkpoint (" +
                      std::to_string(a.bytes) + " bytes, crc32 " + crc32_hex(a.crc32) + " then; " +
                      std::to_string(b.bytes) + " bytes, crc32 " + crc32_hex(b.crc32) + " now)" +
                      why);
}

struct CheckpointReader::Piece {
  uint64_t flat_begin, n, data_offset;
  int file;
};

CheckpointReader::CheckpointReader(const std::string& dir, const CheckpointMeta& meta,
                                   const std::function<bool(int)>& verify)
    : dir_(dir) {
  for (int r = 0; r < meta.world; r++) {
    const RankRecord& rec = meta.ranks[r];
    files_.emplace_back(new InputFile(dir + "/" + rec.file.name, "checkpoint shard"));
    const InputFile& f = *files_.back();
    auto bad = [&](const std::string& what) { throw DataError(f.path() + ": " + what); };
    if (f.size() != rec.file.bytes)
      bad("the file has " + std::to_string(f.size()) + " bytes, meta.json records " +
          std::to_string(rec.file.bytes));
    const RankFileHeader h = read_rank_header(f);
    if (h.step != meta.step || h.world != meta.world || h.rank != r)
      bad("the header says step " + std::to_string(h.step) + ", world " + std::to_string(h.world) +
          ", rank " + std::to_string(h.rank) + "; meta.json says step " +
          std::to_string(meta.step) + ", world " + std::to_string(meta.world) + ", rank " +
          std::to_string(r));
    if (h.pieces.size() != rec.pieces)
      bad("the header has " + std::to_string(h.pieces.size()) + " pieces, meta.json records " +
          std::to_string(rec.pieces));
    if (verify(r)) {
      const uint32_t crc = verify_rank_data(f, h);
      if (crc != rec.file.crc32)
        bad("file checksum mismatch (meta.json records " + crc32_hex(rec.file.crc32) +
            ", the file has " + crc32_hex(crc) + ")");
    }
    const std::vector<uint64_t> offsets = piece_data_offsets(h);
    for (size_t i = 0; i < h.pieces.size(); i++)
      if (h.pieces[i].n > 0)
        pieces_.push_back({h.pieces[i].flat_begin, h.pieces[i].n, offsets[i], r});
  }
  std::sort(pieces_.begin(), pieces_.end(),
            [](const Piece& a, const Piece& b) { return a.flat_begin < b.flat_begin; });
  uint64_t at = 0;
  for (const Piece& p : pieces_) {
    if (p.flat_begin != at)
      throw DataError(dir + ": the rank files " +
                      (p.flat_begin < at ? "overlap at parameter " + std::to_string(p.flat_begin)
                                         : "leave parameters [" + std::to_string(at) + ", " +
                                               std::to_string(p.flat_begin) + ") uncovered"));
    at += p.n;
  }
  if (at != meta.params)
    throw DataError(dir + ": the rank files hold parameters [0, " + std::to_string(at) +
                    "), the model has " + std::to_string(meta.params));
}

CheckpointReader::~CheckpointReader() = default;

void CheckpointReader::read(uint64_t b, uint64_t e, int k, float* out) const {
  auto it = std::upper_bound(pieces_.begin(), pieces_.end(), b,
                             [](uint64_t x, const Piece& p) { return x < p.flat_begin; });
  if (it != pieces_.begin()) --it;
  uint64_t covered = 0;
  for (; it != pieces_.end() && it->flat_begin < e; ++it) {
    const uint64_t lo = std::max(b, it->flat_begin), hi = std::min(e, it->flat_begin + it->n);
    if (lo >= hi) continue;
    const uint64_t offset =
        it->data_offset + (static_cast<uint64_t>(k) * it->n + (lo - it->flat_begin)) * 4;
    files_[it->file]->read_at(offset, out + (lo - b), (hi - lo) * sizeof(float));
    covered += hi - lo;
  }
  if (covered != e - b)
    throw DataError(dir_ + ": the checkpoint does not hold parameters [" + std::to_string(b) +
                    ", " + std::to_string(e) + ")");
}

ResumePoint resume_from_checkpoint(const std::string& run_dir, const GPTConfig& model,
                                   const std::vector<WholeRun>& part,
                                   const TokenizerIdentity& tokenizer, ZeroEngine& engine,
                                   const std::function<void(const std::string&)>& on_reject) {
  int rank = 0, world = 1, local_rank = 0, local_size = 1;
  mpi_ranks(&rank, &world, &local_rank, &local_size);
  const std::vector<std::string> dirs = complete_checkpoints(run_dir);
  ResumePoint point;
  for (auto dir = dirs.rbegin(); dir != dirs.rend(); ++dir) {
    std::string error;
    CheckpointMeta meta;
    try {
      meta = read_checkpoint_meta(*dir);
    } catch (const DataError& e) {
      error = e.what();
    }
    error = first_error_over_ranks(error);
    if (error.empty()) {
      check_same_model(*dir, meta, model, &tokenizer, "the config");
      // Each rank verifies every W-th file, so the job reads each file once.
      const size_t shard = engine.optimizer().shard_size();
      std::vector<float> state[3] = {std::vector<float>(shard, 0.0f),
                                     std::vector<float>(shard, 0.0f),
                                     std::vector<float>(shard, 0.0f)};
      try {
        CheckpointReader reader(*dir, meta, [&](int r) { return r % world == rank; });
        for (const OptimPiece& p : whole_model_pieces(engine.optimizer().pieces(), part))
          for (int k = 0; k < 3; k++)
            reader.read(p.flat_begin, p.flat_begin + p.n, k, state[k].data() + p.shard_offset);
      } catch (const DataError& e) {
        error = e.what();
      }
      error = first_error_over_ranks(error);
      if (error.empty()) {
        engine.optimizer().load_state(state[0], state[1], state[2]);
        engine.refresh_params_from_master();
        point.dir = *dir;
        point.meta = meta;
        return point;
      }
    }
    on_reject(error);
    point.rejected++;
  }
  if (point.rejected > 0)
    throw DataError(run_dir + "/checkpoints: none of the " + std::to_string(point.rejected) +
                    " complete checkpoints verifies (each is named above); without --resume "
                    "the run starts fresh");
  return point;
}

std::vector<float> read_checkpoint_weights(const std::string& dir, const CheckpointMeta& meta) {
  CheckpointReader reader(dir, meta, [](int) { return true; });
  std::vector<float> w(meta.params, 0.0f);
  reader.read(0, meta.params, 0, w.data());
  return w;
}

}  // namespace zt
