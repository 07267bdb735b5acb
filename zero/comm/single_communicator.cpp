// W = 1: every collective is the identity, so no copies and no calls.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <vector>

#include "zero/comm/communicators.h"

namespace zt {
namespace {

class DoneHandle : public CommHandle {
 public:
  void wait() override {}
  bool done() override { return true; }
};

// A receive from itself completes when its send is posted; waiting before
// that would wait forever, so it is an error.
class SelfReceiveHandle : public CommHandle {
 public:
  explicit SelfReceiveHandle(std::shared_ptr<bool> delivered) : delivered_(std::move(delivered)) {}
  void wait() override {
    if (!*delivered_)
      throw std::runtime_error(
          "single-process communicator: waiting on a receive whose send was never posted");
  }
  bool done() override { return *delivered_; }

 private:
  std::shared_ptr<bool> delivered_;
};

class SingleCommunicator : public Communicator {
 public:
  explicit SingleCommunicator(Ops& ops) : ops_(ops) {}
  int rank() const override { return 0; }
  int world() const override { return 1; }
  std::string name() const override { return "single"; }
  Handle all_reduce(void*, size_t, DType) override { return done(); }
  Handle reduce_scatter(const void* send, void* recv, size_t n, DType t) override {
    if (send != recv) ops_.copy(recv, send, n * dtype_size(t));
    return done();
  }
  Handle all_gather(const void* send, void* recv, size_t n, DType t) override {
    if (send != recv) ops_.copy(recv, send, n * dtype_size(t));
    return done();
  }
  Handle reduce(const void* send, void* recv, size_t n, DType t, int) override {
    if (recv && send != recv) ops_.copy(recv, send, n * dtype_size(t));
    return done();
  }
  Handle broadcast(void*, size_t, DType, int) override { return done(); }
  Handle all_to_all(const void* send, void* recv, size_t n, DType t) override {
    if (send != recv) ops_.copy(recv, send, n * dtype_size(t));
    return done();
  }
  std::unique_ptr<Communicator> subgroup(const std::vector<int>&) override {
    return std::unique_ptr<Communicator>(new SingleCommunicator(ops_));
  }
  // The one rank can only message itself: a send is copied out at once and
  // delivered when its receive (same tag) is posted, whichever comes first.
  Handle send(const void* buf, size_t n, DType t, int peer, int tag) override {
    std::vector<char> bytes(check_self(peer, n, t));
    ops_.to_host(bytes.data(), buf, bytes.size());
    auto r = recvs_.find(tag);
    if (r == recvs_.end()) sends_.emplace(tag, std::move(bytes));
    else {
      deliver(r->second, bytes);
      recvs_.erase(r);
    }
    return done();
  }
  Handle recv(void* buf, size_t n, DType t, int peer, int tag) override {
    const Receive to{buf, check_self(peer, n, t), std::make_shared<bool>(false)};
    auto s = sends_.find(tag);
    if (s == sends_.end()) recvs_.emplace(tag, to);
    else {
      deliver(to, s->second);
      sends_.erase(s);
    }
    return Handle(new SelfReceiveHandle(to.delivered));
  }
  void barrier() override {}
  [[noreturn]] void abort(const std::string& why) override {
    std::fprintf(stderr, "zerotrain: rank 0: %s\n", why.c_str());
    std::fflush(stderr);
    std::_Exit(1);
  }

 private:
  struct Receive {
    void* buf;
    size_t bytes;
    std::shared_ptr<bool> delivered;
  };
  static size_t check_self(int peer, size_t n, DType t) {
    if (peer != 0)
      throw std::runtime_error("single-process communicator: no rank " + std::to_string(peer));
    return n * dtype_size(t);
  }
  void deliver(const Receive& to, const std::vector<char>& from) {
    if (to.bytes != from.size())
      throw std::runtime_error("single-process communicator: a " + std::to_string(from.size()) +
                               "-byte message for a " + std::to_string(to.bytes) + "-byte receive");
    ops_.from_host(to.buf, from.data(), from.size());
    *to.delivered = true;
  }
  static Handle done() { return Handle(new DoneHandle()); }
  Ops& ops_;
  std::multimap<int, std::vector<char>> sends_;  // unmatched, by tag
  std::multimap<int, Receive> recvs_;
};

}  // namespace

std::unique_ptr<Communicator> make_single_communicator(Ops& ops) {
  return std::unique_ptr<Communicator>(new SingleCommunicator(ops));
}

}  // namespace zt
