// NCCL communicator (see nccl_communicator.h for the stream semantics).
// Errors of NCCL and CUDA calls throw with the call, file and line. Since
// waits never block the host, a watchdog thread polls every 10 ms: an
// asynchronous NCCL failure (a dead peer), or a collective still unfinished
// after ZT_NCCL_TIMEOUT_S seconds (default 600: a stuck peer), takes the job
// down through abort() with a message instead of leaving the ranks hanging.
// Open MPI's C++ bindings are not needed and do not compile warning-free here.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "model/cuda/cuda_stream.h"
#include "zero/comm/nccl_communicator.h"
#include "zero/comm/nccl_factory.h"

namespace zt {
namespace {

void cuda_check(cudaError_t err, const char* call, const char* file, int line) {
  if (err != cudaSuccess)
    throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call +
                             " failed: " + cudaGetErrorString(err));
}

void nccl_check(ncclResult_t res, const char* call, const char* file, int line) {
  if (res != ncclSuccess)
    throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call +
                             " failed: " + ncclGetErrorString(res));
}

#define ZT_CUDA(call) cuda_check((call), #call, __FILE__, __LINE__)
#define ZT_NCCL(call) nccl_check((call), #call, __FILE__, __LINE__)

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::F32: return ncclFloat32;
    case DType::BF16: return ncclBfloat16;
    case DType::F16: return ncclFloat16;
    case DType::F64: return ncclFloat64;
    case DType::I8: return ncclInt8;
    case DType::U8: return ncclUint8;
    default: return ncclInt64;
  }
}

// Completion events, recycled: re-recording an event that a stream already
// waits on is safe (the wait captured the earlier record). Shared with the
// handles, so events are freed whichever of the two is destroyed last.
class EventPool {
 public:
  ~EventPool() {
    for (cudaEvent_t e : free_) cudaEventDestroy(e);
  }
  cudaEvent_t get() {
    std::lock_guard<std::mutex> g(mu_);
    if (free_.empty()) {
      cudaEvent_t e;
      ZT_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      return e;
    }
    cudaEvent_t e = free_.back();
    free_.pop_back();
    return e;
  }
  void put(cudaEvent_t e) {
    std::lock_guard<std::mutex> g(mu_);
    free_.push_back(e);
  }

 private:
  std::mutex mu_;
  std::vector<cudaEvent_t> free_;
};

class NcclCommunicator;

class NcclHandle : public CommHandle {
 public:
  NcclHandle(std::shared_ptr<EventPool> pool, cudaEvent_t done, cudaStream_t compute,
             NcclCommunicator* owner, uint64_t group = 0)
      : pool_(std::move(pool)), done_(done), compute_(compute), owner_(owner), group_(group) {}
  ~NcclHandle() override { pool_->put(done_); }
  void wait() override;
  bool done() override;

 private:
  std::shared_ptr<EventPool> pool_;
  cudaEvent_t done_;
  cudaStream_t compute_;
  NcclCommunicator* owner_;
  uint64_t group_;  // the group it was posted in (0: none); its event is recorded at its end
  bool waited_ = false;
};

// What each rank tells the others before NCCL starts: its host and GPU.
struct RankDevice {
  char host[MPI_MAX_PROCESSOR_NAME];
  unsigned char uuid[16];
  int device;
};

class NcclCommunicator : public Communicator {
 public:
  // `owned`: the communicator frees `comm` (a split made by subgroup()).
  NcclCommunicator(Ops& ops, MPI_Comm comm, bool owned = false)
      : ops_(ops), mpi_(comm), owned_(owned), pool_(std::make_shared<EventPool>()) {
    if (!ops.on_device())
      throw std::runtime_error("system.communicator: nccl needs the cuda backend, got '" +
                               ops.name() + "'");
    compute_ = static_cast<cudaStream_t>(cuda_compute_stream(ops));
    MPI_Comm_rank(mpi_, &rank_);
    MPI_Comm_size(mpi_, &world_);
    require_one_gpu_per_rank();

    // Rank 0 makes the id; its success travels with it so no rank waits alone.
    ncclUniqueId id;
    std::memset(&id, 0, sizeof(id));
    int id_ok = 1;
    std::string id_error;
    if (rank_ == 0) {
      const ncclResult_t r = ncclGetUniqueId(&id);
      id_ok = r == ncclSuccess;
      if (!id_ok) id_error = ncclGetErrorString(r);
    }
    MPI_Bcast(&id_ok, 1, MPI_INT, 0, mpi_);
    if (!id_ok)
      throw std::runtime_error("system.communicator: nccl: ncclGetUniqueId failed on rank 0" +
                               (id_error.empty() ? std::string() : ": " + id_error));
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, mpi_);

    ZT_CUDA(cudaGetDevice(&device_));
    ZT_CUDA(cudaStreamCreateWithFlags(&comm_stream_, cudaStreamNonBlocking));
    ZT_CUDA(cudaEventCreateWithFlags(&compute_ready_, cudaEventDisableTiming));
    const ncclResult_t init = ncclCommInitRank(&nccl_, world_, id, rank_);
    if (init != ncclSuccess) {
      cudaEventDestroy(compute_ready_);
      cudaStreamDestroy(comm_stream_);
      throw std::runtime_error("system.communicator: nccl: ncclCommInitRank failed on rank " +
                               std::to_string(rank_) + ": " + ncclGetErrorString(init));
    }
  }

  ~NcclCommunicator() override {
    stop_watchdog_ = true;
    if (watchdog_.joinable()) watchdog_.join();
    for (auto& p : pending_) cudaEventDestroy(p.first);
    // Let queued collectives finish, watching for a failed peer meanwhile.
    bool failed = false;
    while (true) {
      const cudaError_t q = cudaStreamQuery(comm_stream_);
      if (q != cudaErrorNotReady) break;
      if (async_error() != ncclSuccess) {
        failed = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    if (failed) ncclCommAbort(nccl_);
    else ncclCommDestroy(nccl_);
    cudaEventDestroy(compute_ready_);
    cudaStreamDestroy(comm_stream_);
    if (owned_) MPI_Comm_free(&mpi_);
  }

  int rank() const override { return rank_; }
  int world() const override { return world_; }
  std::string name() const override { return "nccl"; }

  Handle all_reduce(void* buf, size_t count, DType t) override {
    before_collective();
    // uint8 flags take the maximum (communicator.h).
    ZT_NCCL(ncclAllReduce(buf, buf, count, nccl_type(t), t == DType::U8 ? ncclMax : ncclSum, nccl_,
                          comm_stream_));
    return after_collective();
  }
  Handle reduce_scatter(const void* send, void* recv, size_t recv_count, DType t) override {
    before_collective();
    ZT_NCCL(ncclReduceScatter(send, recv, recv_count, nccl_type(t), ncclSum, nccl_, comm_stream_));
    return after_collective();
  }
  Handle all_gather(const void* send, void* recv, size_t send_count, DType t) override {
    before_collective();
    ZT_NCCL(ncclAllGather(send, recv, send_count, nccl_type(t), nccl_, comm_stream_));
    return after_collective();
  }
  Handle reduce(const void* send, void* recv, size_t count, DType t, int root) override {
    before_collective();
    ZT_NCCL(ncclReduce(send, recv, count, nccl_type(t), ncclSum, root, nccl_, comm_stream_));
    return after_collective();
  }

  Handle broadcast(void* buf, size_t count, DType t, int root) override {
    before_collective();
    ZT_NCCL(ncclBroadcast(buf, buf, count, nccl_type(t), root, nccl_, comm_stream_));
    return after_collective();
  }

  // One grouped send and receive per peer.
  Handle all_to_all(const void* send, void* recv, size_t count, DType t) override {
    before_collective();
    const size_t block = count * dtype_size(t);
    ZT_NCCL(ncclGroupStart());
    for (int peer = 0; peer < world_; peer++) {
      ZT_NCCL(ncclSend(static_cast<const char*>(send) + peer * block, count, nccl_type(t), peer,
                       nccl_, comm_stream_));
      ZT_NCCL(ncclRecv(static_cast<char*>(recv) + peer * block, count, nccl_type(t), peer, nccl_,
                       comm_stream_));
    }
    ZT_NCCL(ncclGroupEnd());
    return after_collective();
  }

  std::unique_ptr<Communicator> subgroup(const std::vector<int>& members) override {
    MPI_Comm sub;
    MPI_Comm_split(mpi_, members.front(), rank_, &sub);
    return std::make_unique<NcclCommunicator>(ops_, sub, true);
  }

  // NCCL has no tags (communicator.h: messages match in posting order).
  Handle send(const void* buf, size_t count, DType t, int peer, int) override {
    if (!open_group_) before_collective();
    ZT_NCCL(ncclSend(buf, count, nccl_type(t), peer, nccl_, comm_stream_));
    return open_group_ ? grouped_handle() : after_collective();
  }
  Handle recv(void* buf, size_t count, DType t, int peer, int) override {
    if (!open_group_) before_collective();
    ZT_NCCL(ncclRecv(buf, count, nccl_type(t), peer, nccl_, comm_stream_));
    return open_group_ ? grouped_handle() : after_collective();
  }

  // A group's calls are queued on the stream only at ncclGroupEnd, so their
  // handles' events are recorded there, all after the whole group.
  void group_begin() override {
    if (open_group_) throw std::logic_error("nccl: group_begin inside a group");
    before_collective();
    ZT_NCCL(ncclGroupStart());
    open_group_ = ++groups_;
  }
  void group_end() override {
    if (!open_group_) throw std::logic_error("nccl: group_end without group_begin");
    open_group_ = 0;
    ZT_NCCL(ncclGroupEnd());
    for (cudaEvent_t e : group_events_) ZT_CUDA(cudaEventRecord(e, comm_stream_));
    group_events_.clear();
    watch_stream();
  }
  uint64_t open_group() const { return open_group_; }

  void barrier() override { MPI_Barrier(mpi_); }

  [[noreturn]] void abort(const std::string& why) override {
    std::fprintf(stderr, "zerotrain: rank %d: %s\n", rank_, why.c_str());
    std::fflush(stderr);
    ncclCommAbort(nccl_);
    MPI_Abort(mpi_, 1);
    std::_Exit(1);
  }

  // Aborts the job when NCCL reports an asynchronous failure (e.g. a dead peer).
  void check_async() {
    const ncclResult_t r = async_error();
    if (r != ncclSuccess)
      abort(std::string("NCCL failed asynchronously: ") + ncclGetErrorString(r));
  }

 private:
  ncclResult_t async_error() {
    ncclResult_t r = ncclSuccess;
    if (ncclCommGetAsyncError(nccl_, &r) != ncclSuccess) return ncclInternalError;
    return r == ncclInProgress ? ncclSuccess : r;
  }

  // The collective must see everything the compute stream has queued so far.
  void before_collective() {
    ZT_CUDA(cudaEventRecord(compute_ready_, compute_));
    ZT_CUDA(cudaStreamWaitEvent(comm_stream_, compute_ready_, 0));
  }
  Handle after_collective() {
    cudaEvent_t done = pool_->get();
    ZT_CUDA(cudaEventRecord(done, comm_stream_));
    watch_stream();
    return Handle(new NcclHandle(pool_, done, compute_, this));
  }
  Handle grouped_handle() {
    cudaEvent_t done = pool_->get();
    group_events_.push_back(done);
    return Handle(new NcclHandle(pool_, done, compute_, this, open_group_));
  }
  // The watchdog follows everything queued on the stream so far.
  void watch_stream() {
    cudaEvent_t watched;
    ZT_CUDA(cudaEventCreateWithFlags(&watched, cudaEventDisableTiming));
    ZT_CUDA(cudaEventRecord(watched, comm_stream_));
    {
      std::lock_guard<std::mutex> g(watch_mu_);
      pending_.push_back({watched, std::chrono::steady_clock::now()});
    }
    if (!watchdog_.joinable()) watchdog_ = std::thread([this] { watch(); });
  }

  // The watchdog: failed or stuck collectives end the job with a message.
  void watch() {
    cudaSetDevice(device_);
    const char* env = std::getenv("ZT_NCCL_TIMEOUT_S");
    const double timeout_s = env ? std::atof(env) : 600.0;
    while (!stop_watchdog_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      check_async();
      std::lock_guard<std::mutex> g(watch_mu_);
      while (!pending_.empty() && cudaEventQuery(pending_.front().first) == cudaSuccess) {
        cudaEventDestroy(pending_.front().first);
        pending_.pop_front();
      }
      if (!pending_.empty()) {
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                            pending_.front().second)
                                  .count();
        if (waited > timeout_s)
          abort("an NCCL collective has not finished after " + std::to_string(int(waited)) +
                " s (ZT_NCCL_TIMEOUT_S): a peer is stuck or dead");
      }
    }
  }

  // NCCL refuses two ranks on one GPU; say so up front, identically on every rank.
  void require_one_gpu_per_rank() {
    RankDevice mine;
    std::memset(&mine, 0, sizeof(mine));
    int len = 0;
    MPI_Get_processor_name(mine.host, &len);
    ZT_CUDA(cudaGetDevice(&mine.device));
    cudaDeviceProp prop;
    ZT_CUDA(cudaGetDeviceProperties(&prop, mine.device));
    std::memcpy(mine.uuid, prop.uuid.bytes, sizeof(mine.uuid));
    std::vector<RankDevice> all(world_);
    MPI_Allgather(&mine, sizeof(RankDevice), MPI_BYTE, all.data(), sizeof(RankDevice), MPI_BYTE,
                  mpi_);
    for (int i = 0; i < world_; ++i) {
      for (int j = i + 1; j < world_; ++j) {
        if (std::memcmp(all[i].uuid, all[j].uuid, sizeof(mine.uuid)) != 0) continue;
        throw std::runtime_error(
            "system.communicator: nccl: ranks " + std::to_string(i) + " and " + std::to_string(j) +
            " share GPU " + std::to_string(all[i].device) + " on host " + all[i].host +
            ", and NCCL needs one GPU per rank; use system.communicator: mpi to share a GPU");
      }
    }
  }

  Ops& ops_;
  MPI_Comm mpi_;
  bool owned_ = false;
  int rank_ = 0, world_ = 1;
  cudaStream_t compute_ = nullptr;
  cudaStream_t comm_stream_ = nullptr;
  cudaEvent_t compute_ready_ = nullptr;
  ncclComm_t nccl_ = nullptr;
  int device_ = 0;
  std::thread watchdog_;
  std::atomic<bool> stop_watchdog_{false};
  std::mutex watch_mu_;
  std::deque<std::pair<cudaEvent_t, std::chrono::steady_clock::time_point>> pending_;
  std::shared_ptr<EventPool> pool_;
  uint64_t groups_ = 0, open_group_ = 0;   // groups begun; the open one (0: none)
  std::vector<cudaEvent_t> group_events_;  // the open group's handles, recorded at its end
};

// A grouped call's event is recorded at group_end: waiting before it would
// wait on nothing.
void NcclHandle::wait() {
  if (waited_) return;
  if (group_ != 0 && group_ == owner_->open_group())
    throw std::logic_error("nccl: a grouped call's handle waited on before group_end");
  ZT_CUDA(cudaStreamWaitEvent(compute_, done_, 0));
  waited_ = true;
}

bool NcclHandle::done() {
  if (group_ != 0 && group_ == owner_->open_group()) return false;
  const cudaError_t q = cudaEventQuery(done_);
  if (q == cudaSuccess) return true;
  if (q != cudaErrorNotReady) ZT_CUDA(q);
  owner_->check_async();
  return false;
}

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(Ops& ops, MPI_Comm comm) {
  return std::make_unique<NcclCommunicator>(ops, comm);
}

std::unique_ptr<Communicator> make_nccl_communicator(Ops& ops) {
  return make_nccl_communicator(ops, MPI_COMM_WORLD);
}

}  // namespace zt
