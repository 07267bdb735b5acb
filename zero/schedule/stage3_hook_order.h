// The order in which DeepSpeed's stage 3 sees gradients become ready, from
// the model's own order. Stage 3 runs each Linear through its own autograd
// function (LinearFunctionForZeroStage3 in runtime/zero/linear.py), whose
// weight and bias gradients reach the hooks bias first up to 0.19.3 and
// weight first from 0.19.4 (traced on s3_default_b1e4, whose buckets close
// between the two). 0.19.4's change to that function: its backward gathers a
// partitioned weight itself (weight.all_gather(), weight.partition() in a
// finally); which part of it reorders the hooks was not isolated.
#pragma once
#include <vector>

#include "model/param_table.h"

namespace zt {

// `ready_order` with every Linear's (bias, weight) pair, adjacent in it, swapped
// to (weight, bias) when `weight_first`. A Linear is a module whose own
// parameters are a 2-D weight and a 1-D bias, in that registration order.
std::vector<int> stage3_hook_order(const std::vector<int>& ready_order, const ParamTable& table,
                                   bool weight_first);

// Hands gradients on in a scheduled order when they become ready in another:
// one that is ready before its turn is held (the caller keeps its buffer)
// until every tensor before it in the schedule has been handed on.
class ReadyInOrder {
 public:
  ReadyInOrder(std::vector<int> scheduled, size_t tensors)
      : order_(std::move(scheduled)), ready_(tensors, false) {}
  // A new pass over the schedule.
  void begin() {
    next_ = 0;
    ready_.assign(ready_.size(), false);
  }
  // Tensor p's gradient is ready: `hand_on(q)` for each tensor whose turn has
  // come, in the schedule's order (none, p alone, or p and those held).
  template <class F>
  void ready(int p, F hand_on) {
    ready_.at(static_cast<size_t>(p)) = true;
    while (next_ < order_.size() && ready_[static_cast<size_t>(order_[next_])])
      hand_on(order_[next_++]);
  }

 private:
  std::vector<int> order_;
  std::vector<bool> ready_;
  size_t next_ = 0;
};

}  // namespace zt
