// Executes a BucketSchedule (stages 1, 2 and 3 share it): tensors' gradients
// arrive one by one in the schedule's order; each is packed into the buffer of
// the bucket it belongs to; a bucket whose turn has come is reduced with its
// collectives, in zero.communication_data_type (converted there and back when
// that differs from the model dtype). When a reduction completes, every slice
// this rank owns is handed to the sink. Buffers come from a pool of the
// schedule's `buffers` (zerotrain's aligned chunks may need more open at
// once); with one, each bucket is waited for as soon as it is issued, as
// DeepSpeed does on its compute stream.
#pragma once
#include <deque>
#include <functional>
#include <vector>

#include "model/ops.h"
#include "zero/comm/communicator.h"
#include "zero/comm/quantized_reduce.h"
#include "zero/schedule/schedule.h"

namespace zt {

class BucketReducer {
 public:
  // Called with each owned slice of a reduced bucket, `data` pointing at it.
  using Sink = std::function<void(const BucketSlice& slice, const void* data)>;
  // `quantized`: qgZ's reducer, for schedules with its calls (else null).
  BucketReducer(const BucketSchedule& schedule, Ops& ops, Communicator& comm, DType wire, Sink sink,
                QuantizedReducer* quantized = nullptr);
  ~BucketReducer();
  BucketReducer(const BucketReducer&) = delete;
  BucketReducer& operator=(const BucketReducer&) = delete;

  const BucketSchedule& schedule() const { return schedule_; }
  // A new pass over the order.
  void begin();
  // The next tensor in the order; `grad` is its whole gradient (model dtype).
  void arrive(int param, const void* grad);
  // After the last tensor: reduces what is left and waits for everything.
  void finish();
  // From now on, each bucket is waited for (with every one before it) as
  // soon as it is issued, its slices sunk, and then `hook(bucket)` is called:
  // MiCS's all-reduce across replicas, which DeepSpeed issues right after the
  // bucket's reduce-scatter at the accumulation boundary. Null: back to normal.
  void after_each_bucket(std::function<void(int)> hook) { after_ = std::move(hook); }

 private:
  struct Slot {
    void* data;
    void* wire;  // null when the wire dtype is the model dtype
  };
  struct InFlight {
    int bucket;
    Slot slot;
    std::vector<Handle> handles;
  };
  void reduce(int bucket);
  void finish_oldest();
  Slot take_slot();

  BucketSchedule schedule_;
  Ops& ops_;
  Communicator& comm_;
  DType model_, wire_;
  size_t es_, capacity_;
  Sink sink_;
  std::function<void(int)> after_;
  QuantizedReducer* quantized_;
  std::vector<std::vector<std::pair<int, int>>> slices_of_;  // per tensor: (bucket, slice)
  std::vector<Slot> slots_, free_;
  std::vector<Slot> open_;  // per bucket, data == null when not open
  std::deque<InFlight> in_flight_;
  size_t pos_ = 0;
};

}  // namespace zt
