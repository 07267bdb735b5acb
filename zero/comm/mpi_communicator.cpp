// MPI communicator, on its own duplicate of MPI_COMM_WORLD. Host fp32 buffers
// go straight to MPI's non-blocking collectives (the handle holds the
// MPI_Request). MPI advances a non-blocking collective only inside MPI calls,
// so while any is outstanding a progress thread pokes MPI (MPI_Iprobe) every
// 100 us: that is what lets overlap_comm hide reductions behind backward
// (it needs MPI_THREAD_MULTIPLE; without it, collectives progress at wait()).
// Host fp64 goes straight to MPI too. Device buffers, and bf16/fp16 of any
// kind, are staged: copied to host memory, widened to fp32 (MPI has no 16-bit
// float types; fp64 stays fp64), reduced, narrowed and copied back; staged
// calls complete before they return, since MPI cannot wait on a CUDA stream.
// Every wait polls (zero/comm/mpi_polling.h) instead of spinning in MPI.
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "model/host_floats.h"
#include "zero/comm/communicators.h"
#include "zero/comm/mpi_polling.h"

namespace zt {
namespace {

// Keeps MPI progressing while non-blocking collectives are outstanding.
class ProgressThread {
 public:
  explicit ProgressThread(MPI_Comm comm) : comm_(comm) {
    int level = 0;
    MPI_Query_thread(&level);
    if (level == MPI_THREAD_MULTIPLE) thread_ = std::thread([this] { run(); });
  }
  ~ProgressThread() {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
  }
  void started() {
    {
      std::lock_guard<std::mutex> g(mu_);
      outstanding_++;
    }
    cv_.notify_one();
  }
  void finished() {
    std::lock_guard<std::mutex> g(mu_);
    outstanding_--;
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [this] { return stop_ || outstanding_ > 0; });
      if (stop_) return;
      lock.unlock();
      int flag = 0;
      MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, MPI_STATUS_IGNORE);
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      lock.lock();
    }
  }
  MPI_Comm comm_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  int outstanding_ = 0;
  bool stop_ = false;
};

class MpiHandle : public CommHandle {
 public:
  MpiHandle(MPI_Request r, std::function<void()> after, ProgressThread* progress)
      : req_(r), after_(std::move(after)), progress_(progress) {
    progress_->started();
  }
  ~MpiHandle() override { wait(); }
  void wait() override {
    if (!finished_) poll_until([this] { return done(); });
  }
  bool done() override {
    if (finished_) return true;
    int flag = 0;
    MPI_Test(&req_, &flag, MPI_STATUS_IGNORE);
    if (flag) finish();
    return finished_;
  }

 private:
  void finish() {
    finished_ = true;
    progress_->finished();
    if (after_) after_();
  }
  MPI_Request req_;
  std::function<void()> after_;
  ProgressThread* progress_;
  bool finished_ = false;
};

class DoneHandle : public CommHandle {
 public:
  void wait() override {}
  bool done() override { return true; }
};

class MpiCommunicator : public Communicator {
 public:
  // Takes ownership of `comm` (a duplicate of the world, or a split of one).
  MpiCommunicator(Ops& ops, MPI_Comm comm) : ops_(ops), comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &world_);
    progress_.reset(new ProgressThread(comm_));
  }
  ~MpiCommunicator() override {
    progress_.reset();
    MPI_Comm_free(&comm_);
  }
  int rank() const override { return rank_; }
  int world() const override { return world_; }
  std::string name() const override { return "mpi"; }

  Handle all_reduce(void* buf, size_t n, DType t) override {
    if (t == DType::U8) {  // flags: the maximum over the ranks (communicator.h)
      std::vector<unsigned char> h(n);
      ops_.to_host(h.data(), buf, n);
      MPI_Request r;
      MPI_Iallreduce(MPI_IN_PLACE, h.data(), count(n), MPI_UNSIGNED_CHAR, MPI_MAX, comm_, &r);
      complete_polling(r);
      ops_.from_host(buf, h.data(), n);
      return done();
    }
    if (direct(t)) {
      MPI_Request r;
      MPI_Iallreduce(MPI_IN_PLACE, buf, count(n), mpi_type(t), MPI_SUM, comm_, &r);
      return Handle(new MpiHandle(r, nullptr, progress_.get()));
    }
    Staged h = stage_in(buf, n, t);
    MPI_Request r;
    MPI_Iallreduce(MPI_IN_PLACE, h.data(), count(n), h.type, MPI_SUM, comm_, &r);
    complete_polling(r);
    stage_out(buf, h, n, t);
    return done();
  }

  Handle reduce_scatter(const void* send, void* recv, size_t n, DType t) override {
    if (direct(t)) {
      // A separate receive buffer keeps in-place calls (recv inside send) legal for MPI.
      const size_t bytes = n * dtype_size(t);
      auto tmp = std::make_shared<std::vector<char>>(bytes);
      MPI_Request r;
      MPI_Ireduce_scatter_block(send, tmp->data(), count(n), mpi_type(t), MPI_SUM, comm_, &r);
      return Handle(new MpiHandle(
          r, [tmp, recv, bytes] { std::memcpy(recv, tmp->data(), bytes); }, progress_.get()));
    }
    Staged h = stage_in(send, n * world_, t);
    Staged out = staged_buffer(n, t);
    MPI_Request r;
    MPI_Ireduce_scatter_block(h.data(), out.data(), count(n), h.type, MPI_SUM, comm_, &r);
    complete_polling(r);
    stage_out(recv, out, n, t);
    return done();
  }

  // Gathers and all-to-alls need no arithmetic: host buffers move as raw bytes.
  Handle all_gather(const void* send, void* recv, size_t n, DType t) override {
    const size_t es = dtype_size(t);
    const bool in_place = send == static_cast<const char*>(recv) + rank_ * n * es;
    if (!ops_.on_device()) {
      MPI_Request r;
      MPI_Iallgather(in_place ? MPI_IN_PLACE : send, count(n * es), MPI_BYTE, recv, count(n * es),
                     MPI_BYTE, comm_, &r);
      return Handle(new MpiHandle(r, nullptr, progress_.get()));
    }
    // Gathers need no arithmetic: move the raw words.
    std::vector<char> mine(n * es), all(n * es * world_);
    ops_.to_host(mine.data(), send, n * es);
    MPI_Request r;
    MPI_Iallgather(mine.data(), count(n * es), MPI_BYTE, all.data(), count(n * es), MPI_BYTE, comm_,
                   &r);
    complete_polling(r);
    ops_.from_host(recv, all.data(), all.size());
    return done();
  }

  Handle reduce(const void* send, void* recv, size_t n, DType t, int root) override {
    if (direct(t)) {
      MPI_Request r;
      const bool in_place = rank_ == root && send == recv;
      MPI_Ireduce(in_place ? MPI_IN_PLACE : send, recv, count(n), mpi_type(t), MPI_SUM, root, comm_,
                  &r);
      return Handle(new MpiHandle(r, nullptr, progress_.get()));
    }
    Staged h = stage_in(send, n, t);
    Staged out = staged_buffer(rank_ == root ? n : 0, t);
    MPI_Request r;
    MPI_Ireduce(h.data(), rank_ == root ? out.data() : nullptr, count(n), h.type, MPI_SUM, root,
                comm_, &r);
    complete_polling(r);
    if (rank_ == root) stage_out(recv, out, n, t);
    return done();
  }

  // Broadcasts need no arithmetic: move the raw words.
  Handle broadcast(void* buf, size_t n, DType t, int root) override {
    const size_t bytes = n * dtype_size(t);
    if (!ops_.on_device()) {
      MPI_Request r;
      MPI_Ibcast(buf, count(bytes), MPI_BYTE, root, comm_, &r);
      return Handle(new MpiHandle(r, nullptr, progress_.get()));
    }
    std::vector<char> h(bytes);
    ops_.to_host(h.data(), buf, bytes);
    MPI_Request r;
    MPI_Ibcast(h.data(), count(bytes), MPI_BYTE, root, comm_, &r);
    complete_polling(r);
    ops_.from_host(buf, h.data(), bytes);
    return done();
  }

  Handle all_to_all(const void* send, void* recv, size_t n, DType t) override {
    const size_t block = n * dtype_size(t);
    if (!ops_.on_device()) {
      MPI_Request r;
      MPI_Ialltoall(send, count(block), MPI_BYTE, recv, count(block), MPI_BYTE, comm_, &r);
      return Handle(new MpiHandle(r, nullptr, progress_.get()));
    }
    std::vector<char> mine(block * world_), all(block * world_);
    ops_.to_host(mine.data(), send, mine.size());
    MPI_Request r;
    MPI_Ialltoall(mine.data(), count(block), MPI_BYTE, all.data(), count(block), MPI_BYTE, comm_,
                  &r);
    complete_polling(r);
    ops_.from_host(recv, all.data(), all.size());
    return done();
  }

  std::unique_ptr<Communicator> subgroup(const std::vector<int>& members) override {
    MPI_Comm sub;
    MPI_Comm_split(comm_, members.front(), rank_, &sub);
    return std::unique_ptr<Communicator>(new MpiCommunicator(ops_, sub));
  }

  // Raw bytes; device buffers travel through a host copy.
  Handle send(const void* buf, size_t n, DType t, int peer, int tag) override {
    const size_t bytes = n * dtype_size(t);
    MPI_Request r;
    if (!ops_.on_device()) {
      MPI_Isend(buf, count(bytes), MPI_BYTE, peer, tag, comm_, &r);
      return Handle(new MpiHandle(r, nullptr, progress_.get()));
    }
    auto staged = std::make_shared<std::vector<char>>(bytes);
    ops_.to_host(staged->data(), buf, bytes);
    MPI_Isend(staged->data(), count(bytes), MPI_BYTE, peer, tag, comm_, &r);
    // The handle's completion step owns the host copy until MPI is done with it.
    return Handle(new MpiHandle(
        r, [staged] {}, progress_.get()));
  }

  Handle recv(void* buf, size_t n, DType t, int peer, int tag) override {
    const size_t bytes = n * dtype_size(t);
    MPI_Request r;
    if (!ops_.on_device()) {
      MPI_Irecv(buf, count(bytes), MPI_BYTE, peer, tag, comm_, &r);
      return Handle(new MpiHandle(r, nullptr, progress_.get()));
    }
    auto staged = std::make_shared<std::vector<char>>(bytes);
    MPI_Irecv(staged->data(), count(bytes), MPI_BYTE, peer, tag, comm_, &r);
    Ops& ops = ops_;
    return Handle(new MpiHandle(
        r, [staged, buf, bytes, &ops] { ops.from_host(buf, staged->data(), bytes); },
        progress_.get()));
  }

  void barrier() override {
    MPI_Request r;
    MPI_Ibarrier(comm_, &r);
    complete_polling(r);
  }

  [[noreturn]] void abort(const std::string& why) override {
    std::fprintf(stderr, "zerotrain: rank %d: %s\n", rank_, why.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::_Exit(1);
  }

 private:
  bool direct(DType t) const { return !ops_.on_device() && (t == DType::F32 || t == DType::F64); }
  static MPI_Datatype mpi_type(DType t) { return t == DType::F64 ? MPI_DOUBLE : MPI_FLOAT; }
  static int count(size_t n) {
    if (n > static_cast<size_t>(INT32_MAX))
      throw std::runtime_error("MPI collective of " + std::to_string(n) +
                               " elements exceeds MPI's int count; use smaller buckets");
    return static_cast<int>(n);
  }
  static Handle done() { return Handle(new DoneHandle()); }

  // A host copy in the type MPI reduces: fp64 for fp64, fp32 for the rest.
  struct Staged {
    MPI_Datatype type;
    std::vector<double> f64;
    std::vector<float> f32;
    void* data() { return type == MPI_DOUBLE ? static_cast<void*>(f64.data()) : f32.data(); }
  };
  static Staged staged_buffer(size_t n, DType t) {
    Staged h{mpi_type(t), {}, {}};
    if (t == DType::F64) h.f64.resize(n);
    else h.f32.resize(n);
    return h;
  }
  Staged stage_in(const void* src, size_t n, DType t) {
    Staged h = staged_buffer(n, t);
    if (t == DType::F32 || t == DType::F64) {
      ops_.to_host(h.data(), src, n * dtype_size(t));
      return h;
    }
    std::vector<uint16_t> raw(n);
    ops_.to_host(raw.data(), src, n * sizeof(uint16_t));
    for (size_t i = 0; i < n; i++)
      h.f32[i] = t == DType::BF16 ? bf16_to_float(raw[i]) : fp16_to_float(raw[i]);
    return h;
  }
  void stage_out(void* dst, Staged& h, size_t n, DType t) {
    if (t == DType::F32 || t == DType::F64) {
      ops_.from_host(dst, h.data(), n * dtype_size(t));
      return;
    }
    std::vector<uint16_t> raw(n);
    for (size_t i = 0; i < n; i++)
      raw[i] = t == DType::BF16 ? float_to_bf16(h.f32[i]) : float_to_fp16(h.f32[i]);
    ops_.from_host(dst, raw.data(), n * sizeof(uint16_t));
  }

  Ops& ops_;
  MPI_Comm comm_;
  int rank_ = 0, world_ = 1;
  std::unique_ptr<ProgressThread> progress_;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(Ops& ops) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  return std::unique_ptr<Communicator>(new MpiCommunicator(ops, comm));
}

}  // namespace zt
