#include "train/loop/stage_compute.h"

namespace zt {
namespace {

class RealStage : public StageCompute {
 public:
  explicit RealStage(GPT& model) : model_(model) {}
  void forward(int slot, const int* inputs, const int* targets, GPT::Head head, float dloss,
               ModuleHooks& hooks) override {
    model_.stage_forward(slot, inputs, targets, head, dloss, hooks);
  }
  void backward(int slot, ModuleHooks& hooks) override { model_.stage_backward(slot, hooks); }
  double loss_sum(int slot) override { return model_.stage_loss_sum(slot); }
  size_t boundary_elems() const override { return model_.boundary_elems(); }
  void* stage_input(int slot) override { return model_.stage_input(slot); }
  const void* stage_output(int slot) const override { return model_.stage_output(slot); }
  void* output_grad() override { return model_.output_grad(); }
  const void* input_grad(int slot) const override { return model_.input_grad(slot); }
  const ParamTable& table() const override { return model_.table(); }
  int tokens() const override { return model_.B() * model_.T(); }

 private:
  GPT& model_;
};

// Every slot's input and output, its input's gradient, and one output
// gradient: what the real model's messages read and write, left as zeros.
class EmulatedStage : public StageCompute {
 public:
  EmulatedStage(const ParamTable& table, EmulatedGPT& model, Ops& ops, int B, int T, int slots)
      : table_(table), model_(model), ops_(ops), tokens_(B * T),
        elems_(GPT::stage_boundary_elems(table, B, T)) {
    for (int s = 0; s < slots; s++) {
      inputs_.push_back(buffer());
      outputs_.push_back(buffer());
      input_grads_.push_back(buffer());
    }
    output_grad_ = buffer();
  }
  ~EmulatedStage() override {
    for (void* p : allocations_) ops_.release(p);
  }
  EmulatedStage(const EmulatedStage&) = delete;
  EmulatedStage& operator=(const EmulatedStage&) = delete;

  void forward(int, const int*, const int*, GPT::Head, float, ModuleHooks& hooks) override {
    model_.forward(hooks);
  }
  void backward(int, ModuleHooks& hooks) override { model_.backward(hooks); }
  double loss_sum(int) override { return 0; }
  size_t boundary_elems() const override { return elems_; }
  void* stage_input(int slot) override { return inputs_[static_cast<size_t>(slot)]; }
  const void* stage_output(int slot) const override { return outputs_[static_cast<size_t>(slot)]; }
  void* output_grad() override { return output_grad_; }
  const void* input_grad(int slot) const override {
    return input_grads_[static_cast<size_t>(slot)];
  }
  const ParamTable& table() const override { return table_; }
  int tokens() const override { return tokens_; }

 private:
  void* buffer() {
    void* p = ops_.alloc(elems_ * dtype_size(ops_.dtype()), MemCategory::Activations);
    allocations_.push_back(p);
    return p;
  }
  const ParamTable& table_;
  EmulatedGPT& model_;
  Ops& ops_;
  int tokens_;
  size_t elems_;
  std::vector<void*> allocations_, inputs_, outputs_, input_grads_;
  void* output_grad_;
};

}  // namespace

std::unique_ptr<StageCompute> real_stage(GPT& model) {
  return std::unique_ptr<StageCompute>(new RealStage(model));
}

std::unique_ptr<StageCompute> emulated_stage(const ParamTable& table, EmulatedGPT& model, Ops& ops,
                                             int B, int T, int slots) {
  return std::unique_ptr<StageCompute>(new EmulatedStage(table, model, ops, B, T, slots));
}

}  // namespace zt
