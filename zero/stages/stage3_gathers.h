// Stage 3's parameter data: the GatherBackend (param_gatherer.h) that the
// engine's coordinator drives. It owns the rank's parameter shard (on the
// device, or in zero.offload_param's store, whose pieces a StoreUploader reads
// into the send buffers), every gathered copy and hpZ's secondary pieces with
// their communicator. A coalesced all-gather copies the pieces of every
// parameter it covers into one send buffer, gathers W of them (or, hpZ, the
// secondary pieces over the hpZ group), and unpacks each tensor into its own
// buffer. qwZ quantizes the send buffer to int8 blocks and gathers codes and
// scales in two calls, dequantizing before the unpack. Gathers run over MiCS's
// shard group (the world without MiCS); with its hierarchical gather, across
// the nodes first (waited for, as DeepSpeed does), then inside the node. Apart from the engine so
// that the engine keeps only hooks, gradients and the step, and this class only
// where parameter bytes live and how they move.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "model/ops.h"
#include "model/param_table.h"
#include "zero/comm/communicator.h"
#include "zero/comm/quantized_blocks.h"
#include "zero/layout/stage3_layout.h"
#include "zero/optim/offload_store.h"
#include "zero/optim/shard_optimizer.h"
#include "zero/schedule/param_gatherer.h"
#include "zero/stages/mics_comms.h"
#include "zero/zero_config.h"

namespace zt {

class Stage3Gathers : public GatherBackend {
 public:
  // `comm`: the world (hpZ's groups, the trace check's broadcast).
  Stage3Gathers(const ZeroConfig& z, const ParamTable& table, const Stage3Layout& layout, Ops& ops,
                Communicator& comm, MicsComms& mics);
  ~Stage3Gathers() override;
  Stage3Gathers(const Stage3Gathers&) = delete;
  Stage3Gathers& operator=(const Stage3Gathers&) = delete;

  void gather(const std::vector<int>& params, GatherFrom from) override;
  void wait(int param) override;
  void drop(int param, bool keep_secondary) override;
  void drop_secondaries() override;
  std::vector<int64_t> broadcast_from_rank0(const std::vector<int64_t>& mine) override;
  void read_ahead(const std::vector<int>& params) override;

  // hpZ: every parameter's secondary piece cut from the whole model's
  // starting values (flat layout, fp32 on the host), as DeepSpeed's zero.Init
  // cuts them when it partitions (partition_parameters.py _partition_param_sec,
  // 0.14.4): the first step then gathers over the hpZ group only.
  void build_secondaries(const float* full_host);
  // Every gathered copy dropped; secondary pieces stay.
  void drop_all();
  // Parameter p's gathered copy; nullptr while it is not available.
  const void* gathered(int p) const { return full_[p]; }
  // The shard takes the master weights' values, or one optimizer step; either
  // way what was read ahead from it is stale.
  void write_shard(ShardOptimizer& optimizer);
  void step_shard(ShardOptimizer& optimizer, const void* grads, const OptimSettings& s,
                  float grad_scale, int t);

  uint64_t live_peak_bytes() const { return live_.peak() * es_; }
  uint64_t secondary_peak_bytes() const { return secondary_peak_ * es_; }
  uint64_t read_ahead_bytes() const {
    return param_uploader_ ? param_uploader_->read_ahead_bytes() : 0;
  }

 private:
  struct Call {
    std::vector<int> params;
    bool secondary = false;
    bool hierarchical = false;  // MiCS: recv holds the pieces in gathered_block order
    int ranks = 0;              // of the communicator it runs over
    size_t per_rank = 0;        // elements each rank sends
    void* send = nullptr;       // model dtype
    void* recv = nullptr;       // model dtype, ranks * per_rank
    void* across = nullptr;     // MiCS hierarchical: the inter-node call's output
    QuantizedGatherShape q;     // qwZ: codes and scales on the wire
    void *send_q = nullptr, *recv_q = nullptr;
    float *send_s = nullptr, *recv_s = nullptr;
    std::vector<Handle> handles;
  };
  size_t piece_of(const Call& c, int p) const;
  const char* source_of(const Call& c, int p) const;
  void fill_send(Call& c);
  void free_call(Call& c);

  const ParamTable& table_;
  const Stage3Layout& layout_;
  Ops& ops_;
  Communicator& comm_;
  MicsComms& mics_;
  DType dt_;
  size_t es_;
  bool quantized_weights_;  // qwZ
  void* shard_params_ = nullptr;
  std::shared_ptr<NvmeDirectory> param_dir_;
  std::unique_ptr<OffloadStore> param_store_;      // zero.offload_param: instead of shard_params_
  std::unique_ptr<StoreUploader> param_uploader_;  // its pieces into the gathers' send buffers
  std::vector<void*> full_;                        // each parameter's gathered copy, when available
  std::vector<void*> secondary_;  // hpZ: each parameter's secondary piece, when it has one
  std::unique_ptr<Communicator> hpz_comm_;
  uint64_t secondary_live_ = 0, secondary_peak_ = 0;
  LiveParams live_;
  std::map<int, Call> pending_;
  std::map<int, int> call_of_;
  int pending_id_ = 0;
};

}  // namespace zt
