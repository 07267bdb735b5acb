// Test-only UnitHooks without ZeRO: one full flat parameter buffer and one full
// flat gradient buffer in the backend's model dtype and memory space (allocated
// through the Ops, so zeroed). A unit's pointer is the buffer base plus the unit's
// offset in the flat layout; releasing and "grads ready" need no work.
#pragma once
#include <vector>

#include "model/ops.h"
#include "model/param_table.h"
#include "model/unit_hooks.h"

namespace zt {

class FlatHooks : public UnitHooks {
 public:
  FlatHooks(const ParamTable& table, Ops& ops)
      : table_(table), ops_(ops), elem_bytes_(dtype_size(ops.dtype())) {
    params_ = static_cast<char*>(ops_.alloc(table_.total() * elem_bytes_, MemCategory::Params));
    grads_ = static_cast<char*>(ops_.alloc(table_.total() * elem_bytes_, MemCategory::Grads));
  }
  ~FlatHooks() override {
    ops_.release(params_);
    ops_.release(grads_);
  }
  FlatHooks(const FlatHooks&) = delete;
  FlatHooks& operator=(const FlatHooks&) = delete;

  const void* acquire_params(int unit) override { return params_ + unit_offset_bytes(unit); }
  void release_params(int) override {}
  void* acquire_grads(int unit) override { return grads_ + unit_offset_bytes(unit); }
  void grads_ready(int) override {}

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
  size_t unit_offset_bytes(int unit) const { return table_.units()[unit].offset * elem_bytes_; }
  float* f32_staging() {
    return static_cast<float*>(
        ops_.alloc(table_.total() * sizeof(float), MemCategory::Activations));
  }

  const ParamTable& table_;
  Ops& ops_;
  size_t elem_bytes_;
  char* params_;
  char* grads_;
};

}  // namespace zt
