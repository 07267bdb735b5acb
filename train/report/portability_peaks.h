// The peak FLOP/s that architectural efficiency divides by, per system of
// `zerotrain report --portability`, each with its source:
// - CUDA runs: the GPU's datasheet peak from a network preset's "peak_TFLOPs"
//   (configs/networks/*.json) whose "gpus" list names the GPU model the run
//   recorded, times the ranks (one GPU each);
// - CPU runs: an sgemm measured at report time on this host (zero/bench/
//   sgemm_bench.h), only when the runs recorded this host's name; the host's
//   peak, not times the ranks, since a CPU run's ranks (an emulated cluster's
//   too) share the one host;
// - compute-emulated runs: the emulated device's stated rate, the model FLOPs
//   of a micro-step over its stated duration (emulated_compute.micro_step_ms ×
//   time_scale of wall time), times the ranks: not a hardware peak.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "train/report/portability_runs.h"
#include "zero/bench/sgemm_bench.h"

namespace zt {

struct GpuPeak {
  std::vector<std::string> gpus;  // GPU models as the driver names them ("NVIDIA H200")
  double flops_per_second = 0;    // per GPU
  std::string precision, source, file;
};

// Every "peak_TFLOPs" block of the *.json files in `networks_dir`, in file
// name order ({} when the directory is absent). Throws std::runtime_error
// naming the file on a malformed block.
std::vector<GpuPeak> read_gpu_peaks(const std::string& networks_dir);

// Sets each run's peak_flops and the system's peak_source, or its
// no_peak_reason. `sgemm` is called at most once, and only for a CPU system
// whose recorded host name is `this_host`.
void assign_peaks(std::vector<PortabilitySystem>& systems, const std::vector<GpuPeak>& gpu_peaks,
                  const std::string& this_host, const std::function<SgemmRate()>& sgemm);

}  // namespace zt
