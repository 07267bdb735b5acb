#include "zero/stages/bucket_reducer.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "model/device_services.h"

namespace zt {

BucketReducer::BucketReducer(const BucketSchedule& schedule, Ops& ops, Communicator& comm,
                             DType wire, Sink sink, QuantizedReducer* quantized)
    : schedule_(schedule), ops_(ops), comm_(comm), model_(ops.dtype()), wire_(wire),
      es_(dtype_size(ops.dtype())), capacity_(std::max<size_t>(1, schedule.largest_bucket())),
      sink_(std::move(sink)), quantized_(quantized) {
  open_.assign(schedule_.buckets.size(), Slot{nullptr, nullptr});
  for (size_t b = 0; b < schedule_.buckets.size(); b++) {
    const std::vector<BucketSlice>& slices = schedule_.buckets[b].slices;
    for (size_t k = 0; k < slices.size(); k++) {
      const size_t p = static_cast<size_t>(slices[k].param);
      if (slices_of_.size() <= p) slices_of_.resize(p + 1);
      slices_of_[p].push_back({static_cast<int>(b), static_cast<int>(k)});
    }
  }
}

BucketReducer::~BucketReducer() {
  for (const Slot& s : slots_) {
    ops_.release(s.data);
    if (s.wire) ops_.release(s.wire);
  }
}

BucketReducer::Slot BucketReducer::take_slot() {
  const size_t pool = static_cast<size_t>(std::max(1, schedule_.buffers));
  if (free_.empty() && slots_.size() >= pool && !in_flight_.empty()) finish_oldest();
  if (free_.empty()) {
    Slot s{ops_.alloc(capacity_ * es_, MemCategory::CommBuffers),
           wire_ == model_ ? nullptr
                           : ops_.alloc(capacity_ * dtype_size(wire_), MemCategory::CommBuffers)};
    slots_.push_back(s);
    free_.push_back(s);
  }
  Slot s = free_.back();
  free_.pop_back();
  ops_.memzero(s.data, capacity_ * es_);  // padding in a bucket reads as zero
  return s;
}

void BucketReducer::begin() {
  if (pos_ != 0 || !in_flight_.empty())
    throw std::logic_error("gradient buckets: a pass began before the last one finished");
}

void BucketReducer::arrive(int param, const void* grad) {
  if (pos_ >= schedule_.order.size() || schedule_.order[pos_] != param)
    throw std::logic_error("gradient of tensor " + std::to_string(param) +
                           " arrived out of the scheduled order");
  for (int b : schedule_.reduce_at[pos_]) reduce(b);
  pos_++;
  if (static_cast<size_t>(param) >= slices_of_.size()) return;
  const char* src = static_cast<const char*>(grad);
  for (auto [b, k] : slices_of_[param]) {
    if (!open_[b].data) open_[b] = take_slot();
    const BucketSlice& run = schedule_.buckets[b].slices[k];
    char* dst = static_cast<char*>(open_[b].data);
    if (run.ranks > 1 && run.stride == run.n) {  // the pieces lie back to back: one copy
      ops_.copy(dst + run.offset * es_, src + run.param_offset * es_, run.ranks * run.n * es_);
      continue;
    }
    for (int i = 0; i < run.ranks; i++) {
      const BucketSlice s = run.piece(i);
      ops_.copy(dst + s.offset * es_, src + s.param_offset * es_, s.n * es_);
    }
  }
}

void BucketReducer::finish() {
  if (pos_ != schedule_.order.size())
    throw std::logic_error("gradient buckets: the pass ended after " + std::to_string(pos_) +
                           " of " + std::to_string(schedule_.order.size()) + " tensors");
  for (int b : schedule_.reduce_at[pos_]) reduce(b);
  while (!in_flight_.empty()) finish_oldest();
  pos_ = 0;
}

void BucketReducer::reduce(int b) {
  const GradBucket& bucket = schedule_.buckets[b];
  Slot slot = open_[b].data ? open_[b] : take_slot();  // an empty bucket still reduces
  open_[b] = Slot{nullptr, nullptr};
  char* buf = static_cast<char*>(slot.wire ? slot.wire : slot.data);
  const size_t wes = dtype_size(wire_);
  if (slot.wire) ops_.services().convert(slot.wire, wire_, slot.data, model_, bucket.size);
  InFlight f{b, slot, {}};
  comm_.purpose(Purpose::Gradients);
  for (const BucketCall& c : bucket.calls) {
    char* at = buf + c.offset * wes;
    switch (c.primitive) {
      case Primitive::AllReduce: f.handles.push_back(comm_.all_reduce(at, c.count, wire_)); break;
      case Primitive::Reduce:
        f.handles.push_back(comm_.reduce(at, at, c.count, wire_, c.root));
        break;
      case Primitive::ReduceScatter:
        f.handles.push_back(
            comm_.reduce_scatter(at, at + comm_.rank() * c.count * wes, c.count, wire_));
        break;
      case Primitive::AllToAll: {
        if (!quantized_) throw std::logic_error("gradient bucket: qgZ call without its reducer");
        const int W = comm_.world();
        const QgzShape q{c.count * W, quantized_->local(), W / quantized_->local(), c.quant_groups};
        quantized_->reduce(at, at + comm_.rank() * c.count * wes, wire_, q);
        break;
      }
      default: throw std::logic_error("gradient bucket: unexpected primitive");
    }
  }
  in_flight_.push_back(std::move(f));
  if (after_) {
    while (!in_flight_.empty()) finish_oldest();
    after_(b);
  } else if (schedule_.buffers <= 1) {
    finish_oldest();
  }
}

void BucketReducer::finish_oldest() {
  InFlight f = std::move(in_flight_.front());
  in_flight_.pop_front();
  for (Handle& h : f.handles) h->wait();
  const GradBucket& bucket = schedule_.buckets[f.bucket];
  if (f.slot.wire) ops_.services().convert(f.slot.data, model_, f.slot.wire, wire_, bucket.size);
  const int rank = comm_.rank();
  for (const BucketSlice& run : bucket.slices) {
    if (run.owner >= 0 && (rank < run.owner || rank >= run.owner + run.ranks)) continue;
    const BucketSlice s = run.owner < 0 ? run : run.piece(rank - run.owner);
    sink_(s, static_cast<const char*>(f.slot.data) + s.offset * es_);
  }
  free_.push_back(f.slot);
}

}  // namespace zt
