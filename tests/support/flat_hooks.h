// Test-only ModuleHooks without ZeRO: one full flat parameter buffer and one
// full flat gradient buffer in the backend's model dtype and memory space
// (allocated through the Ops, so zeroed). A parameter's pointer is the buffer
// base plus its offset in the flat layout; releasing and "grad ready" need no
// work. Every event is recorded, so tests can check the model's event order.
#pragma once
#include <vector>

#include "model/gpt.h"
#include "model/module_hooks.h"
#include "model/ops.h"
#include "model/param_table.h"
#include "train/loop/init_weights.h"

namespace zt {

class FlatHooks : public ModuleHooks {
 public:
  FlatHooks(const ParamTable& table, Ops& ops)
      : table_(table), ops_(ops), elem_bytes_(dtype_size(ops.dtype())) {
    params_ = static_cast<char*>(ops_.alloc(table_.total() * elem_bytes_, MemCategory::Params));
    grads_ = static_cast<char*>(ops_.alloc(table_.total() * elem_bytes_, MemCategory::Grads));
    for (const ModuleInfo& m : table_.modules()) {
      module_params_.emplace_back();
      for (int p : m.params) module_params_.back().push_back(params_ + offset_bytes(p));
    }
  }
  ~FlatHooks() override {
    ops_.release(params_);
    ops_.release(grads_);
  }
  FlatHooks(const FlatHooks&) = delete;
  FlatHooks& operator=(const FlatHooks&) = delete;

  const void* const* fetch(int module, bool backward) override {
    events.push_back({ModuleEvent::Fetch, backward, module});
    return module_params_[module].data();
  }
  void release(int module, bool backward) override {
    events.push_back({ModuleEvent::Release, backward, module});
  }
  void* grad(int param) override { return grads_ + offset_bytes(param); }
  void grad_ready(int param) override { events.push_back({ModuleEvent::GradReady, true, param}); }

  std::vector<ModuleEvent> events;

  // Host fp32 weights in the flat layout -> the parameter buffer (model dtype).
  void set_params(const std::vector<float>& flat) {
    float* staging = f32_staging();
    ops_.from_host(staging, flat.data(), table_.total() * sizeof(float));
    ops_.from_f32(params_, staging, table_.total());
    ops_.release(staging);
  }
  // The gradient buffer widened to fp32, on the host, in the flat layout.
  std::vector<float> grads_f32() {
    std::vector<float> out(table_.total());
    float* staging = f32_staging();
    ops_.to_f32(staging, grads_, table_.total());
    ops_.to_host(out.data(), staging, table_.total() * sizeof(float));
    ops_.release(staging);
    return out;
  }

 private:
  size_t offset_bytes(int param) const { return table_.params()[param].offset * elem_bytes_; }
  float* f32_staging() {
    return static_cast<float*>(
        ops_.alloc(table_.total() * sizeof(float), MemCategory::Activations));
  }

  const ParamTable& table_;
  Ops& ops_;
  size_t elem_bytes_;
  char* params_;
  char* grads_;
  std::vector<std::vector<const void*>> module_params_;
};

// The events one forward_backward of a full-width model emits (B = 2, GPT-2
// initial weights, a fixed token pattern: the events do not depend on them).
inline std::vector<ModuleEvent> forward_backward_events(const ParamTable& table,
                                                        Recompute recompute) {
  auto ops = make_cpu_ops();
  FlatHooks hooks(table, *ops);
  std::vector<float> w(table.total());
  init_gpt2_weights(table, 3, w.data());
  hooks.set_params(w);
  const int B = 2, T = table.config().seq_len, N = B * T;
  GPT model(table, *ops, B, T, recompute);
  std::vector<int> in(N), tgt(N);
  for (int i = 0; i < N; i++) in[i] = tgt[(i + 1) % N] = i % table.config().vocab_size;
  model.forward_backward(in.data(), tgt.data(), 1.0f / N, hooks);
  return hooks.events;
}

}  // namespace zt
