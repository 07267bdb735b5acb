// NCCL's rules for point-to-point messages, over another communicator (MPI's
// on the CPU), so that the CPU tests find the postings NCCL would hang on
// without two GPUs:
// - messages between two ranks match in posting order (tags are ignored);
// - a send completes only once its receive has been posted, whatever the
//   size (NCCL moves a message through a bounded buffer; MPI's eager
//   protocol would complete a small send alone);
// - each rank's calls run one at a time, in posting order (NCCL's one
//   stream per communicator), except those posted between group_begin and
//   group_end, which run together.
// Stricter than NCCL in one way: a call's host thread blocks until the call
// before it has finished, where NCCL's host goes on queueing. A call that
// cannot start within 60 s ends the job with a message naming the deadlock.
#pragma once
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "zero/comm/communicator.h"

namespace zt {

class NcclOrderCommunicator : public Communicator {
 public:
  explicit NcclOrderCommunicator(std::unique_ptr<Communicator> inner) : inner_(std::move(inner)) {}
  ~NcclOrderCommunicator() override {
    for (auto& call : running_) finish(*call);
  }

  int rank() const override { return inner_->rank(); }
  int world() const override { return inner_->world(); }
  std::string name() const override { return inner_->name() + " in NCCL's order"; }

  Handle all_reduce(void* buf, size_t n, DType t) override {
    return run([&] { return inner_->all_reduce(buf, n, t); });
  }
  Handle reduce_scatter(const void* send, void* recv, size_t n, DType t) override {
    return run([&] { return inner_->reduce_scatter(send, recv, n, t); });
  }
  Handle all_gather(const void* send, void* recv, size_t n, DType t) override {
    return run([&] { return inner_->all_gather(send, recv, n, t); });
  }
  Handle reduce(const void* send, void* recv, size_t n, DType t, int root) override {
    return run([&] { return inner_->reduce(send, recv, n, t, root); });
  }
  Handle broadcast(void* buf, size_t n, DType t, int root) override {
    return run([&] { return inner_->broadcast(buf, n, t, root); });
  }
  Handle all_to_all(const void* send, void* recv, size_t n, DType t) override {
    return run([&] { return inner_->all_to_all(send, recv, n, t); });
  }
  std::unique_ptr<Communicator> subgroup(const std::vector<int>& members) override {
    return std::make_unique<NcclOrderCommunicator>(inner_->subgroup(members));
  }

  // The data under one tag, matched in posting order; the receiver's posting
  // is an acknowledgement under another, which the send completes on.
  Handle send(const void* buf, size_t n, DType t, int peer, int) override {
    auto call = start();
    call->parts.push_back(inner_->send(buf, n, t, peer, kData));
    call->parts.push_back(inner_->recv(&call->ack, 1, DType::U8, peer, kAck));
    return track(call);
  }
  Handle recv(void* buf, size_t n, DType t, int peer, int) override {
    auto call = start();
    call->parts.push_back(inner_->send(&call->ack, 1, DType::U8, peer, kAck));
    call->parts.push_back(inner_->recv(buf, n, t, peer, kData));
    return track(call);
  }
  void group_begin() override {
    wait_running();
    grouping_ = true;
  }
  void group_end() override { grouping_ = false; }

  void barrier() override {
    wait_running();
    inner_->barrier();
  }
  void annotate(Phase p, int micro) override { inner_->annotate(p, micro); }
  void purpose(Purpose p) override { inner_->purpose(p); }
  [[noreturn]] void abort(const std::string& why) override {
    inner_->abort(why);
    std::_Exit(1);  // unreachable: every communicator's abort ends the process
  }

 private:
  static constexpr int kData = 0, kAck = 1;
  struct Call {
    std::vector<Handle> parts;
    unsigned char ack = 1;
    bool finished = false;
  };
  class CallHandle : public CommHandle {
   public:
    CallHandle(NcclOrderCommunicator& owner, std::shared_ptr<Call> call)
        : owner_(owner), call_(std::move(call)) {}
    void wait() override { owner_.finish(*call_); }
    bool done() override { return owner_.poll(*call_); }

   private:
    NcclOrderCommunicator& owner_;
    std::shared_ptr<Call> call_;
  };

  // Outside a group a call starts only once the calls before it are done.
  std::shared_ptr<Call> start() {
    if (!grouping_) wait_running();
    return std::make_shared<Call>();
  }
  Handle track(const std::shared_ptr<Call>& call) {
    running_.push_back(call);
    return Handle(new CallHandle(*this, call));
  }
  template <typename Post>
  Handle run(Post post) {
    auto call = start();
    call->parts.push_back(post());
    return track(call);
  }
  bool poll(Call& call) {
    if (call.finished) return true;
    for (Handle& h : call.parts)
      if (!h->done()) return false;
    call.finished = true;
    return true;
  }
  void finish(Call& call) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!poll(call)) {
      if (std::chrono::steady_clock::now() > deadline)
        inner_->abort("rank " + std::to_string(rank()) +
                      ": a call has not finished after 60 s under NCCL's order: a deadlock");
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  void wait_running() {
    for (auto& call : running_) finish(*call);
    running_.clear();
  }

  std::unique_ptr<Communicator> inner_;
  std::vector<std::shared_ptr<Call>> running_;  // the last call, or the last group's calls
  bool grouping_ = false;
};

}  // namespace zt
