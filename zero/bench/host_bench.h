// The host side of offload, measured (`zerotrain commbench --host`): the
// figures the step-time model's offload terms take (HostFigures), on this
// rank while every other rank of the job does the same, as in a run:
// - copies between backend memory and page-locked host memory through Ops'
//   asynchronous copies (on a GPU: PCIe or C2C; on the CPU backend: memcpy),
//   each direction;
// - the host AdamW (zero/optim/host_adamw.h) at this rank's default thread count;
// - with a directory: an offload file store (zero/optim/offload_store.h), written
//   then read in chunks with `in_flight` requests at once, through the page
//   cache as the offloaded optimizer's files are: the bytes of both over
//   their time (the model's rate for reads and writes together).
#pragma once
#include <cstddef>
#include <string>

#include "model/ops.h"

namespace zt {

struct HostBenchSpec {
  size_t elements = size_t(1) << 22;  // fp32 elements per array (AdamW; copies move 4x as bytes)
  int reps = 5;                       // timed repetitions after one warm-up; the median counts
  std::string nvme_dir;               // "" skips the file store
  int rank = 0;                       // names the store's directory
  size_t chunk_bytes = size_t(4) << 20;
  int in_flight = 4;
};

struct HostBenchResult {
  double to_host_bytes_per_s = 0, from_host_bytes_per_s = 0;
  double adamw_elements_per_s = 0;
  double nvme_bytes_per_s = 0;  // 0 without nvme_dir
  int threads = 0;              // the host AdamW's
};

HostBenchResult run_host_bench(Ops& ops, const HostBenchSpec& spec);

}  // namespace zt
