// GPT::training_events and GPT::combine_points, recorded from the model
// itself: one forward_backward
// runs against a hook that records every event, so the order is written once,
// in gpt.cpp. The events depend on the module tree alone (the layer count and
// the recompute level), not on any width, so the model runs at the narrowest
// shape with the same layers (one channel, one head, a one-token vocabulary,
// one token) on the CPU backend, a few hundred flops per layer, whatever the
// caller's model size or backend; the events are then named in the caller's
// table. A dry backend that skips the arithmetic would save nothing measurable
// and would be a second implementation of every op to keep in step.
#include <stdexcept>
#include <string>
#include <vector>

#include "model/gpt.h"

namespace zt {
namespace {

// Records every event; parameters and gradients are one zeroed fp32 buffer
// each in the flat layout (the CPU backend's memory is the host's).
class EventRecorder : public ModuleHooks {
 public:
  explicit EventRecorder(const ParamTable& table)
      : table_(table), params_(table.total()), grads_(table.total()) {
    for (const ModuleInfo& m : table.modules()) {
      module_params_.emplace_back();
      for (int p : m.params) module_params_.back().push_back(&params_[table.params()[p].offset]);
    }
  }

  const void* const* fetch(int module, bool backward) override {
    events.push_back({ModuleEvent::Fetch, backward, module});
    return module_params_[module].data();
  }
  void release(int module, bool backward) override {
    events.push_back({ModuleEvent::Release, backward, module});
  }
  void* grad(int param) override { return &grads_[table_.params()[param].offset]; }
  void grad_ready(int param) override { events.push_back({ModuleEvent::GradReady, true, param}); }
  void combine(int module, bool backward, Combine what, void* buf, size_t count) override {
    (void)buf;
    combines.push_back({module, backward, what, count, events.size()});
  }

  std::vector<ModuleEvent> events;
  struct Recorded {
    int module;
    bool backward;
    Combine what;
    size_t count;
    size_t before_event;  // events recorded before it
  };
  std::vector<Recorded> combines;

 private:
  const ParamTable& table_;
  std::vector<float> params_, grads_;
  std::vector<std::vector<const void*>> module_params_;
};

// Index of what `name` is in `table` (a module, or a parameter with `param`).
int index_in(const ParamTable& table, const std::string& name, bool param) {
  if (!param) {
    const int m = table.module_index(name);
    if (m >= 0) return m;
  } else if (const ParamInfo* p = table.find(name)) {
    return static_cast<int>(p - table.params().data());
  }
  throw std::logic_error("training_events: the recorded " +
                         std::string(param ? "parameter " : "module ") + name +
                         " is not in the model's table");
}

// The narrowest model with `layers` blocks: `width` heads, channels and
// vocabulary rows, `positions` positions.
GPTConfig narrow_config(int layers, int width, int positions = 1) {
  GPTConfig c;
  c.n_layer = layers;
  c.n_head = width;
  c.n_embd = width;
  c.vocab_size = width;
  c.seq_len = positions;
  return c;
}

// One forward_backward of a micro-batch of the table's positions, recorded.
EventRecorder record_pass(const ParamTable& table, Recompute recompute) {
  const std::unique_ptr<Ops> ops = make_cpu_ops();
  EventRecorder recorder(table);
  const int tokens = table.config().seq_len;
  GPT model(table, *ops, 1, tokens, recompute);
  const std::vector<int> zeros(static_cast<size_t>(tokens), 0);
  model.forward_backward(zeros.data(), zeros.data(), 1.0f, recorder);
  return recorder;
}

}  // namespace

// The narrowest split model: two shards of one head and one vocabulary row
// each, a two-channel residual stream, one token (two under sequence
// parallelism, one per shard); a combine over n elements is then per token
// either the width (2) or one, or a LayerNorm's two parameters.
std::vector<CombinePoint> GPT::combine_points(const ParamTable& table, Recompute recompute) {
  const int width = 2, tokens = table.sequence_split() ? 2 : 1;
  const ParamTable shard(narrow_config(table.config().n_layer, width, tokens),
                         TensorSplit{2, 0, table.sequence_split()}, table.stage());
  const EventRecorder recorded = record_pass(shard, recompute);
  // The split model's events are the unsplit one's (the module tree is the
  // same), so a combine's place among them holds for training_events.
  if (recorded.events.size() != training_events(table, recompute).size())
    throw std::logic_error("combine_points: the split model's events are not the model's");
  std::vector<CombinePoint> points;
  for (const EventRecorder::Recorded& r : recorded.combines) {
    const size_t per_token = r.count / tokens;
    const bool layernorm_grads = r.what == Combine::SumLayerNormGrads;
    if (layernorm_grads ? r.count != 2 * width
                        : r.count % tokens != 0 || (per_token != 1 && per_token != width))
      throw std::logic_error("combine_points: a combine of " + std::to_string(r.count) +
                             " elements over " + std::to_string(tokens) + " tokens");
    points.push_back({index_in(table, shard.modules()[r.module].name, false), r.backward, r.what,
                      !layernorm_grads && per_token != 1, r.before_event});
  }
  return points;
}

std::vector<ModuleEvent> GPT::training_events(const ParamTable& table, Recompute recompute) {
  const ParamTable narrow_table(narrow_config(table.config().n_layer, 1), TensorSplit{},
                                table.stage());
  std::vector<ModuleEvent> events = record_pass(narrow_table, recompute).events;
  for (ModuleEvent& e : events) {
    const bool param = e.kind == ModuleEvent::GradReady;
    const std::string& name =
        param ? narrow_table.params()[e.index].name : narrow_table.modules()[e.index].name;
    e.index = index_in(table, name, param);
  }
  return events;
}

}  // namespace zt
