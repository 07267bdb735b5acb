#include "train/loop/pipeline_step.h"

#include <chrono>
#include <thread>
#include <utility>

#include "model/device_services.h"

namespace zt {
namespace {

using Clock = std::chrono::steady_clock;

// Message tags: micro-batch k's activation 2k, its gradient 2k + 1; the tied
// embedding's gradient after them.
int activation_tag(int k) { return 2 * k; }
int gradient_tag(int k) { return 2 * k + 1; }
int tied_embedding_tag(int micro_batches) { return 2 * micro_batches; }

// The stage's hooks for one micro-batch: every call goes to ZeRO's hooks, but
// the root's fetch names the micro-batch in the comm trace (the forwards of a
// pipeline run outside ZeRO's micro-step brackets), and in the last
// micro-batch's backward wte's gradient-ready is held back until the tied
// copies' gradients are summed. With `tied_sum`, each micro-batch's wte
// gradient is also added into it before ZeRO takes it (ZeRO-2 and -3 reduce
// it as the micro-step ends; the sum is what the other end needs).
class StageHooks : public ModuleHooks {
 public:
  StageHooks(ModuleHooks& zero, const ParamTable& table, Communicator& comm, Ops& ops,
             void* tied_sum)
      : zero_(zero), table_(table), comm_(comm), ops_(ops), tied_sum_(tied_sum) {}
  void set(int micro, bool hold_tied_grad) {
    micro_ = micro;
    hold_ = hold_tied_grad;
  }
  bool holding() const { return held_; }
  void release_held() {
    held_ = false;
    zero_.grad_ready(0);
  }

  const void* const* fetch(int module, bool backward) override {
    const void* const* p = zero_.fetch(module, backward);
    if (table_.modules()[static_cast<size_t>(module)].is_root())
      comm_.annotate(backward ? Phase::Backward : Phase::Forward, micro_);
    return p;
  }
  void release(int module, bool backward) override { zero_.release(module, backward); }
  void* grad(int param) override { return zero_.grad(param); }
  void grad_ready(int param) override {
    if (param == 0 && tied_sum_)
      ops_.services().add_inplace(tied_sum_, zero_.grad(0), table_.params().front().numel);
    if (param == 0 && hold_) held_ = true;
    else zero_.grad_ready(param);
  }
  void combine(int module, bool backward, Combine what, void* buf, size_t count) override {
    zero_.combine(module, backward, what, buf, count);
  }

 private:
  ModuleHooks& zero_;
  const ParamTable& table_;
  Communicator& comm_;
  Ops& ops_;
  void* tied_sum_;
  int micro_ = 0;
  bool hold_ = false, held_ = false;
};

double wait_timed(Handle& h) {
  const auto t0 = Clock::now();
  h->wait();
  // NCCL's wait only queues the compute stream behind the message: the host
  // waits for it too, so that what is timed is the stage's wait for the
  // message, as MPI's blocking wait times it.
  while (!h->done()) std::this_thread::sleep_for(std::chrono::microseconds(20));
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

bool is_message(PipeOp op) { return op != PipeOp::Forward && op != PipeOp::Backward; }

void wait_if_pending(Handle& h) {
  if (h) h->wait();
  h.reset();
}

}  // namespace

PipelineStage::PipelineStage(PipelineSchedule schedule, int micro_batches,
                             CountingCommunicator& pipeline, Ops& ops)
    : micro_batches_(micro_batches), pipe_(pipeline), ops_(ops), stage_(pipeline.rank()),
      stages_(pipeline.world()), actions_(stage_actions(schedule, stages_, stage_, micro_batches)) {
  activation_sends_.resize(static_cast<size_t>(slots()));
  gradient_sends_.resize(static_cast<size_t>(slots()));
}

PipelineStage::~PipelineStage() = default;

void PipelineStage::wait_all_sends() {
  for (Handle& h : activation_sends_) wait_if_pending(h);
  for (Handle& h : gradient_sends_) wait_if_pending(h);
}

Handle PipelineStage::recv_activation(void* buf, size_t n, int micro) {
  return pipe_.recv_counted(buf, n, ops_.dtype(), stage_ - 1, activation_tag(micro),
                            Purpose::Activations);
}

PipelineStepResult PipelineStage::train(StageCompute& model, ZeroEngine& engine, ModuleHooks& hooks,
                                        const std::function<void(int, int*, int*)>& load,
                                        float dloss) {
  const size_t n = model.boundary_elems();
  const DType t = ops_.dtype();
  const int S = slots();
  // ZeRO-2 and -3 take each micro-batch's gradients as its backward ends, so
  // the tied wte's copies keep their own sums of them aside for the exchange.
  const bool tied = stages_ > 1 && (first() || last());
  const size_t tied_bytes = model.table().params().front().numel * dtype_size(t);
  void* tied_sum =
      tied && engine.stage() >= 2 ? ops_.alloc(tied_bytes, MemCategory::Grads) : nullptr;
  if (tied_sum) ops_.memzero(tied_sum, tied_bytes);
  StageHooks stage_hooks(hooks, model.table(), pipe_, ops_, tied_sum);
  std::vector<int> in(static_cast<size_t>(model.tokens())), tgt(in.size());
  PipelineStepResult result;
  // A run of messages with no computation between them is posted as one
  // group and its receives waited for after it: 1F1B's steady state sends
  // and receives between the same two stages at once, which NCCL's
  // in-order stream would otherwise hang on (each side's send waiting for
  // the receive the other side queued behind its own send).
  std::vector<Handle> received;
  for (size_t i = 0; i < actions_.size();) {
    if (is_message(actions_[i].op)) {
      pipe_.group_begin();
      for (; i < actions_.size() && is_message(actions_[i].op); i++) {
        const PipeAction& message = actions_[i];
        const int k = message.micro_batch, slot = k % S;
        switch (message.op) {
          case PipeOp::RecvActivation:
            pipe_.annotate(Phase::Forward, k);
            received.push_back(recv_activation(model.stage_input(slot), n, k));
            break;
          case PipeOp::SendActivation:
            pipe_.annotate(Phase::Forward, k);
            activation_sends_[static_cast<size_t>(slot)] =
                pipe_.send_counted(model.stage_output(slot), n, t, stage_ + 1, activation_tag(k),
                                   Purpose::Activations);
            break;
          case PipeOp::RecvGradient:
            pipe_.annotate(Phase::Backward, k);
            received.push_back(pipe_.recv_counted(model.output_grad(), n, t, stage_ + 1,
                                                  gradient_tag(k), Purpose::Activations));
            break;
          case PipeOp::SendGradient:
            pipe_.annotate(Phase::Backward, k);
            gradient_sends_[static_cast<size_t>(slot)] = pipe_.send_counted(
                model.input_grad(slot), n, t, stage_ - 1, gradient_tag(k), Purpose::Activations);
            break;
          default: break;
        }
      }
      pipe_.group_end();
      for (Handle& h : received) result.recv_wait_s += wait_timed(h);
      received.clear();
      continue;
    }
    const PipeAction& a = actions_[i];
    const int k = a.micro_batch, slot = k % S;
    if (a.op == PipeOp::Forward) {
      wait_if_pending(activation_sends_[static_cast<size_t>(slot)]);  // the slot's output
      load(k, in.data(), tgt.data());
      stage_hooks.set(k, false);
      model.forward(slot, in.data(), tgt.data(), GPT::Head::TrainLoss, dloss, stage_hooks);
      if (last()) result.loss_sum += model.loss_sum(slot);
    } else {
      wait_if_pending(gradient_sends_[static_cast<size_t>(slot)]);  // the slot's input gradient
      const bool last_micro = k == micro_batches_ - 1;
      engine.begin_micro_step(k, micro_batches_);
      stage_hooks.set(k, last_micro && tied);
      model.backward(slot, stage_hooks);
      if (!last_micro) engine.end_micro_step();
    }
    i++;
  }
  wait_all_sends();
  if (tied) {
    sum_tied_embedding_grads(stage_hooks, model.table(), tied_sum);
    if (stage_hooks.holding()) stage_hooks.release_held();
  }
  engine.end_micro_step();
  if (tied_sum) ops_.release(tied_sum);
  return result;
}

// Each end sends its copy's gradient over the step to the other and adds the
// one it receives into the last micro-batch's, which ZeRO has not taken yet.
// At stages 0 and 1 that gradient is the step's (ZeRO accumulates it whole),
// so both ends then hold the same sum (a + b and b + a round alike). At
// stages 2 and 3 the step's sum is `tied_sum`, kept aside, and ZeRO took the
// earlier micro-batches' already: each end's ZeRO then sums a + b over the
// micro-steps in another grouping, so the copies can differ by rounding.
// The send and the receive go as one group (NCCL's ncclGroupStart/End).
void PipelineStage::sum_tied_embedding_grads(ModuleHooks& hooks, const ParamTable& table,
                                             const void* tied_sum) {
  const size_t n = table.params().front().numel;
  const DType t = ops_.dtype();
  void* grad = hooks.grad(0);
  const void* mine = tied_sum ? tied_sum : grad;
  void* other = ops_.alloc(n * dtype_size(t), MemCategory::Grads);
  const int peer = first() ? stages_ - 1 : 0, tag = tied_embedding_tag(micro_batches_);
  pipe_.annotate(Phase::Backward, micro_batches_ - 1);
  Handle sent, received;
  pipe_.group_begin();
  if (first()) {
    sent = pipe_.send_counted(mine, n, t, peer, tag, Purpose::Gradients);
    received = pipe_.recv_counted(other, n, t, peer, tag, Purpose::Gradients);
  } else {
    received = pipe_.recv_counted(other, n, t, peer, tag, Purpose::Gradients);
    sent = pipe_.send_counted(mine, n, t, peer, tag, Purpose::Gradients);
  }
  pipe_.group_end();
  sent->wait();
  received->wait();
  ops_.services().add_inplace(grad, other, n);
  ops_.release(other);
}

// One forward through the stages outside the schedule (evaluation, samples,
// HellaSwag): the stage before's n elements into `input`, `forward`, and
// `output` on to the stage after.
void PipelineStage::relay(void* input, const void* output, size_t n,
                          const std::function<void()>& forward) {
  if (!first()) recv_activation(input, n, 0)->wait();
  forward();
  if (!last())
    pipe_
        .send_counted(output, n, ops_.dtype(), stage_ + 1, activation_tag(0), Purpose::Activations)
        ->wait();
}

double PipelineStage::evaluate(StageCompute& model, ModuleHooks& hooks, const int* in,
                               const int* tgt) {
  relay(model.stage_input(0), model.stage_output(0), model.boundary_elems(),
        [&] { model.forward(0, in, tgt, GPT::Head::EvalLoss, 0.0f, hooks); });
  return last() ? model.loss_sum(0) : 0.0;
}

const std::vector<float>& PipelineStage::forward_losses(GPT& model, ModuleHooks& hooks,
                                                        const int* in, const int* tgt) {
  const size_t tokens = static_cast<size_t>(model.B()) * model.T();
  relay(model.stage_input(0), model.stage_output(0), model.boundary_elems(),
        [&] { model.forward_loss(in, tgt, hooks); });
  token_losses_.assign(tokens, 0.0f);
  if (last()) token_losses_ = model.token_losses();
  pipe_.purpose(Purpose::Scalars);
  pipe_.broadcast(token_losses_.data(), token_losses_.size(), DType::F32, stages_ - 1)->wait();
  return token_losses_;
}

std::vector<int> PipelineStage::sample(GPT& model, ModuleHooks& hooks, std::vector<int> prompt,
                                       const SampleSettings& s) {
  const size_t C = static_cast<size_t>(model.table().config().n_embd);
  return generate_tokens(
      std::move(prompt), s, model.T(), [&](const int* window, int t, SplitMix64& rng) {
        std::vector<float> logits;
        relay(model.stage_input(0), model.stage_output(0), model.table().residual_rows(t) * C,
              [&] { logits = model.forward_logits(window, 1, t, t - 1, hooks); });
        int64_t pick = last() ? pick_token(logits, s, rng) : 0;
        pipe_.purpose(Purpose::Scalars);
        pipe_.broadcast(&pick, 1, DType::I64, stages_ - 1)->wait();
        return static_cast<int>(pick);
      });
}

}  // namespace zt
