// Where the model meets ZeRO. The model never owns parameter or gradient
// storage. It runs as a tree of modules (model/param_table.h: the root, the
// embeddings, each block's layernorms and linears, the LM head) and says, in
// the order PyTorch's hooks would fire for the same GPT-2, when each module
// starts and ends, in the forward and in the backward, and when each
// parameter's gradient of the micro-step is complete. ZeRO decides what to
// gather, keep, release and reduce at each of those events.
#pragma once
#include <cstddef>
#include <exception>

namespace zt {

// What the shards of a tensor-parallel model combine before the model goes on
// (model/param_table.h: the split), each over buf[count]. Under sequence
// parallelism a shard's part of the rows is the count/degree elements at
// index·count/degree.
enum class Combine {
  Sum,        // model dtype: the sum over shards (a column-cut projection's
              // output; a row-cut one's input gradient; the embedding lookup)
  SumFloats,  // fp32: the sum over shards (the target's logit, on one shard)
  LogSumExp,  // fp32 per row: each shard's log-sum-exp over its vocabulary
              // rows, merged into the whole vocabulary's
  // Sequence parallelism, in Sum's places:
  GatherRows,         // model dtype: every shard's part of the rows, gathered whole
  ScatterSum,         // model dtype: the sum over shards, each keeping its part
  SumLayerNormGrads,  // model dtype: a LayerNorm's weight and bias gradients
                      // [2C] from the shard's rows, summed over shards
};

class ModuleHooks {
 public:
  virtual ~ModuleHooks() = default;
  // Before module m runs (its forward, or with backward its backward): its own
  // parameters in the backend's model dtype and memory space, [k] for the
  // module's k-th parameter (ParamTable::modules()[m].params[k]). Valid until
  // release(m, backward).
  virtual const void* const* fetch(int module, bool backward) = 0;
  // After module m ran.
  virtual void release(int module, bool backward) = 0;
  // Gradient space of parameter p for this micro-step (the backward ADDS into
  // it); the same space every time until grad_ready(p).
  virtual void* grad(int param) = 0;
  // Parameter p's gradient for this micro-step is complete.
  virtual void grad_ready(int param) = 0;
  // Module m's partial result in buf is to be combined across the shards of
  // a split model, in place (forward, or with backward an input gradient).
  // The model calls it at each such point; an unsplit model's hooks do
  // nothing.
  virtual void combine(int module, bool backward, Combine what, void* buf, size_t count) {
    (void)module, (void)backward, (void)what, (void)buf, (void)count;
  }
};

// Module m's parameters for as long as the scope lives: fetch(m, backward) when
// it opens, release(m, backward) when it closes, so no path of the forward or
// backward can fetch without releasing. An exception abandons the micro-step
// instead and skips the release: releasing then could start work the other
// ranks never join (stage 3's root release compares the module trace across
// ranks), and a release that failed while unwinding would end the process.
class ModuleScope {
 public:
  ModuleScope(ModuleHooks& hooks, int module, bool backward)
      : hooks_(hooks), module_(module), backward_(backward), params_(hooks.fetch(module, backward)),
        uncaught_at_open_(std::uncaught_exceptions()) {}
  ~ModuleScope() noexcept(false) {
    if (std::uncaught_exceptions() == uncaught_at_open_) hooks_.release(module_, backward_);
  }
  ModuleScope(const ModuleScope&) = delete;
  ModuleScope& operator=(const ModuleScope&) = delete;
  // The module's k-th parameter (ParamTable::modules()[m].params[k]).
  const void* operator[](int k) const { return params_[k]; }

 private:
  ModuleHooks& hooks_;
  int module_;
  bool backward_;
  const void* const* params_;
  int uncaught_at_open_;
};

// One combine of a split model's micro-step (GPT::combine_points): over the
// micro-batch's tokens times the residual width (whole_width) or times one,
// or over a LayerNorm's two parameters (SumLayerNormGrads), after the first
// `before_event` events of the micro-step (GPT::training_events) and before
// the next.
struct CombinePoint {
  int module;
  bool backward;
  Combine what;
  bool whole_width;
  size_t before_event;
  // Elements of the combine's buffer for a micro-batch of `tokens` tokens
  // and residual width `width`.
  size_t count(size_t tokens, size_t width) const {
    if (what == Combine::SumLayerNormGrads) return 2 * width;
    return tokens * (whole_width ? width : 1);
  }
};

// One event of a training micro-step, in order (GPT::training_events).
struct ModuleEvent {
  enum Kind { Fetch, Release, GradReady };
  Kind kind;
  bool backward;
  int index;  // the module (Fetch, Release) or the parameter (GradReady)
};

}  // namespace zt
