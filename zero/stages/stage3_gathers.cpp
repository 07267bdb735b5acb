#include "zero/stages/stage3_gathers.h"

#include <algorithm>

#include "model/device_services.h"

namespace zt {

Stage3Gathers::Stage3Gathers(const ZeroConfig& z, const ParamTable& table,
                             const Stage3Layout& layout, Ops& ops, Communicator& comm,
                             MicsComms& mics)
    : table_(table), layout_(layout), ops_(ops), comm_(comm), mics_(mics), dt_(ops.dtype()),
      es_(dtype_size(dt_)), quantized_weights_(z.zero_quantized_weights), live_(table, layout) {
  const size_t n = table.params().size();
  full_.assign(n, nullptr);
  secondary_.assign(n, nullptr);
  if (layout_.hpz() > 1) hpz_comm_ = comm.subgroup(layout_.hpz_group().members_of(comm.rank()));
  if (z.offload_param.enabled()) {  // zero.offload_param: the shard lives off the device
    param_store_ =
        make_offload_store(z.offload_param, "zero.offload_param", param_dir_, comm.rank(),
                           "param_shard.bin", layout_.shard_size() * es_, MemCategory::Params, ops);
    param_uploader_.reset(new StoreUploader(
        *param_store_, ops.services(), z.offload_param.pin_memory && ops.on_device(),
        static_cast<size_t>(std::max<int64_t>(1, z.offload_param.buffer_count))));
  } else {
    shard_params_ = ops_.alloc(layout_.shard_size() * es_, MemCategory::Params);
  }
}

Stage3Gathers::~Stage3Gathers() {
  drop_all();
  drop_secondaries();
  for (auto& kv : pending_) free_call(kv.second);
  ops_.release(shard_params_);
}

void Stage3Gathers::write_shard(ShardOptimizer& optimizer) {
  if (param_uploader_) param_uploader_->forget_read_ahead();
  if (param_store_) optimizer.write_params(*param_store_);
  else optimizer.write_params(shard_params_, Indexing::Shard);
}

void Stage3Gathers::step_shard(ShardOptimizer& optimizer, const void* grads, const OptimSettings& s,
                               float grad_scale, int t) {
  if (param_uploader_) param_uploader_->forget_read_ahead();
  if (param_store_) optimizer.step(grads, Indexing::Shard, *param_store_, s, grad_scale, t);
  else optimizer.step(grads, Indexing::Shard, shard_params_, Indexing::Shard, s, grad_scale, t);
}

size_t Stage3Gathers::piece_of(const Call& c, int p) const {
  return c.secondary ? layout_.secondary_piece(p) : layout_.piece(p);
}

const char* Stage3Gathers::source_of(const Call& c, int p) const {
  return c.secondary ? static_cast<const char*>(secondary_[p])
                     : static_cast<const char*>(shard_params_) + layout_.shard_offset(p) * es_;
}

// Every parameter's piece, one after another.
void Stage3Gathers::fill_send(Call& c) {
  if (!c.secondary && param_uploader_) {
    std::vector<StoreUploader::Range> ranges;
    for (int p : c.params)
      ranges.push_back({layout_.shard_offset(p) * es_, layout_.piece(p) * es_});
    param_uploader_->upload(ranges, c.send);
    return;
  }
  size_t at = 0;
  for (int p : c.params) {
    ops_.copy(static_cast<char*>(c.send) + at * es_, source_of(c, p), piece_of(c, p) * es_);
    at += piece_of(c, p);
  }
}

void Stage3Gathers::gather(const std::vector<int>& params, GatherFrom from) {
  const bool from_secondary = from == GatherFrom::Secondary;
  const int id = pending_id_++;
  Call c;
  c.params = params;
  c.secondary = from_secondary;
  Communicator& over = from_secondary ? *hpz_comm_ : mics_.shard();
  c.ranks = over.world();
  for (int p : params) c.per_rank += piece_of(c, p);
  c.send = ops_.alloc(c.per_rank * es_, MemCategory::CommBuffers);
  c.recv = ops_.alloc(c.per_rank * c.ranks * es_, MemCategory::CommBuffers);
  fill_send(c);
  comm_.purpose(Purpose::Parameters);
  if (c.ranks == 1) {
    // A group of one holds the whole tensors: DeepSpeed's all_gather_coalesced takes its
    // _no_gather_coalesced path (no call, no quantization), so this only copies.
    ops_.copy(c.recv, c.send, c.per_rank * es_);
  } else if (quantized_weights_ && qwz_quantizes(from)) {
    c.q = qwz_shape(c.per_rank);
    c.send_q = ops_.alloc(c.per_rank, MemCategory::CommBuffers);
    c.recv_q = ops_.alloc(c.per_rank * c.ranks, MemCategory::CommBuffers);
    c.send_s = static_cast<float*>(
        ops_.alloc(std::max<size_t>(1, c.q.blocks) * sizeof(float), MemCategory::CommBuffers));
    c.recv_s = static_cast<float*>(ops_.alloc(
        std::max<size_t>(1, c.q.blocks * c.ranks) * sizeof(float), MemCategory::CommBuffers));
    ops_.services().quantize_blocks(c.send_q, c.send_s, c.send, dt_, c.per_rank, c.q.block, 8);
    c.handles.push_back(over.all_gather(c.send_q, c.recv_q, c.per_rank, DType::I8));
    c.handles.push_back(over.all_gather(c.send_s, c.recv_s, c.q.blocks, DType::F32));
  } else if (from == GatherFrom::Primary && mics_.groups().hierarchical) {
    c.hierarchical = true;
    Communicator& across = mics_.inter_node();
    c.across = ops_.alloc(c.per_rank * across.world() * es_, MemCategory::CommBuffers);
    across.all_gather(c.send, c.across, c.per_rank, dt_)->wait();
    c.handles.push_back(
        mics_.intra_node().all_gather(c.across, c.recv, c.per_rank * across.world(), dt_));
  } else {
    c.handles.push_back(over.all_gather(c.send, c.recv, c.per_rank, dt_));
  }
  for (int p : params) call_of_[p] = id;
  pending_[id] = std::move(c);
}

void Stage3Gathers::wait(int param) {
  const int id = call_of_.at(param);
  Call& c = pending_.at(id);
  for (Handle& h : c.handles) h->wait();
  if (c.send_q)
    for (int r = 0; r < c.ranks; r++)
      ops_.services().dequantize_blocks(static_cast<char*>(c.recv) + r * c.per_rank * es_, dt_,
                                        static_cast<const char*>(c.recv_q) + r * c.per_rank,
                                        c.recv_s + r * c.q.blocks, c.per_rank, c.q.block, 8, false);
  size_t at = 0;
  for (int p : c.params) {
    const size_t numel = table_.params()[p].numel, piece = piece_of(c, p);
    const MemCategory cat = layout_.persistent(p) ? MemCategory::Params : MemCategory::CommBuffers;
    char* buf = static_cast<char*>(ops_.alloc(numel * es_, cat));
    for (int r = 0; r < c.ranks && static_cast<size_t>(r) * piece < numel; r++) {
      const size_t block = c.hierarchical ? mics_.groups().gathered_block(r) : r;
      ops_.copy(buf + r * piece * es_, static_cast<char*>(c.recv) + (block * c.per_rank + at) * es_,
                std::min(piece, numel - r * piece) * es_);
    }
    at += piece;
    full_[p] = buf;
    call_of_.erase(p);
    live_.gathered(p);
  }
  free_call(c);
  pending_.erase(id);
}

void Stage3Gathers::drop(int param, bool keep_secondary) {
  if (!full_[param]) return;
  if (keep_secondary && !secondary_[param]) {
    // This rank's piece of the tensor in its hpZ group, padding zeroed.
    const size_t numel = table_.params()[param].numel, sec = layout_.secondary_piece(param);
    const size_t begin = static_cast<size_t>(hpz_comm_->rank()) * sec;
    secondary_[param] = ops_.alloc(sec * es_, MemCategory::Params);
    if (begin < numel)
      ops_.copy(secondary_[param], static_cast<char*>(full_[param]) + begin * es_,
                std::min(sec, numel - begin) * es_);
    secondary_live_ += sec;
    secondary_peak_ = std::max(secondary_peak_, secondary_live_);
  }
  ops_.release(full_[param]);
  full_[param] = nullptr;
  live_.dropped(param);
}

void Stage3Gathers::build_secondaries(const float* full_host) {
  drop_secondaries();
  const size_t group_rank = static_cast<size_t>(hpz_comm_->rank());
  for (size_t p = 0; p < secondary_.size(); p++) {
    const ParamInfo& info = table_.params()[p];
    const size_t sec = layout_.secondary_piece(static_cast<int>(p)), begin = group_rank * sec;
    secondary_[p] = ops_.alloc(sec * es_, MemCategory::Params);  // zeroed: the padding
    if (begin < info.numel) {
      const size_t n = std::min(sec, info.numel - begin);
      float* staged = static_cast<float*>(ops_.alloc(n * sizeof(float), MemCategory::CommBuffers));
      ops_.from_host(staged, full_host + info.offset + begin, n * sizeof(float));
      ops_.from_f32(secondary_[p], staged, n);
      ops_.release(staged);
    }
    secondary_live_ += sec;
  }
  secondary_peak_ = std::max(secondary_peak_, secondary_live_);
}

void Stage3Gathers::drop_all() {
  for (size_t p = 0; p < full_.size(); p++) drop(static_cast<int>(p), false);
}

void Stage3Gathers::drop_secondaries() {
  for (void*& s : secondary_)
    if (s) {
      ops_.release(s);
      s = nullptr;
    }
  secondary_live_ = 0;
}

void Stage3Gathers::read_ahead(const std::vector<int>& params) {
  if (!param_uploader_) return;
  for (int p : params)
    param_uploader_->read_ahead({layout_.shard_offset(p) * es_, layout_.piece(p) * es_});
}

std::vector<int64_t> Stage3Gathers::broadcast_from_rank0(const std::vector<int64_t>& mine) {
  std::vector<int64_t> out = mine;
  void* dev =
      ops_.alloc(std::max<size_t>(1, mine.size()) * sizeof(int64_t), MemCategory::CommBuffers);
  // An empty list is still broadcast (DeepSpeed's first trace check from 0.15.4),
  // but has nothing to copy: an empty vector's data() may be null.
  if (!mine.empty()) ops_.from_host(dev, mine.data(), mine.size() * sizeof(int64_t));
  comm_.purpose(Purpose::Scalars);
  comm_.broadcast(dev, mine.size(), DType::I64, 0)->wait();
  if (!mine.empty()) ops_.to_host(out.data(), dev, mine.size() * sizeof(int64_t));
  ops_.release(dev);
  return out;
}

void Stage3Gathers::free_call(Call& c) {
  for (void* b : {c.send, c.recv, c.across, c.send_q, c.recv_q, static_cast<void*>(c.send_s),
                  static_cast<void*>(c.recv_s)})
    if (b) ops_.release(b);
  c.send = c.recv = c.across = c.send_q = c.recv_q = nullptr;
  c.send_s = c.recv_s = nullptr;
}

}  // namespace zt
