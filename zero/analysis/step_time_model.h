// The step-time model: from a plan's collectives (zero/analysis/plan.h), a network's
// cost per call and the compute time of a micro-step, the time of one
// optimizer step and the part of its communication the compute does not hide.
//
// Assumptions (docs/step_time_model.md):
// - A call's time is the network's time for its primitive at its payload,
//   alone on the network (a call over sub-groups, hpZ's and qgZ's, runs in
//   every group at once: from link figures, or from figures fitted to the
//   measured world-wide curve of its primitive). From link figures a rooted
//   reduce takes its busiest link's time: its bytes follow its algorithm's
//   edges (zero/analysis/link_load.h: a chain, or Open MPI libnbc's own
//   choice, Rabenseifner's or a binomial tree).
// - Calls issued together share the links (zero/analysis/link_load.h): each
//   node link, each direction, serves its calls in issue order for their
//   share of it, beside the other links, and a set of calls ends when its
//   busiest link is done. A bucket's calls are issued together (the
//   BucketReducer issues them all, then waits), so the per-owner path's
//   rooted reduces to different roots overlap on full-duplex links; calls
//   that load every link alike (rings, all-to-alls) still add up.
// - Compute: forward = 1/3 and backward = 2/3 of a micro-step (backward does
//   twice forward's matrix products); it advances uniformly over the
//   parameter elements of the modules it runs (PlannedCall::at).
// - Gradient calls can start once the compute reaches their place; with
//   overlap_comm they run beside the compute, otherwise the compute waits for
//   each. Stage 2 with overlap_comm alternates two buckets: the compute cannot
//   fill a bucket's successor's successor before the bucket is reduced.
//   Over Open MPI (open_mpi) the two buckets in flight share the links side
//   by side (LinkClock::shared_end), so the older ends later than in issue
//   order and the compute waits longer for it; NCCL's, on one stream, run in
//   order.
// - Stage 3's parameter gathers are prefetched: they start as soon as the
//   channel is free and the compute waits where it needs them.
// - Every micro-step's backward ends when its gradient calls have finished;
//   the optimizer step's collectives and the optimizer itself run one after
//   another, nothing hidden.
// - Offload (where the network file gives host figures): the shard's
//   gradients go device -> host over PCIe on a copy channel of their own, each
//   gradient call's share (by elements) once the call of the last micro-step
//   is done; the step starts when the last copy is done. It is then a pipeline
//   of chunks: the host AdamW of one (with nvme: or the state's reads and
//   writes, 24 bytes per element, where longer) beside the parameters of the
//   one before going host -> device. Stage 3's offloaded parameters cross PCIe
//   before each gather, and are written to the host store, not uploaded.
//   Without host figures the compute times' optimizer stands (a measured
//   offloaded run's includes all of it). Quantization kernels: not counted.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "zero/analysis/link_load.h"
#include "zero/analysis/plan.h"

namespace zt {

// Time per call from measured curves (commbench): payload bytes -> seconds,
// linear between measured sizes, bandwidth-bound (proportional) above the
// largest and the smallest's time below it.
struct CallCurve {
  Primitive primitive;
  DType dtype;
  std::vector<double> bytes, seconds;  // ascending bytes
};
double curve_seconds(const CallCurve& c, double payload_bytes);

// Time per call from link figures (a preset of published numbers, or an
// emulated cluster's shaped link): latency per algorithm step, then the bytes
// that stay in a node at the intra-node bandwidth and the bytes that cross a
// node's link at that link's rate (the ring-in-rank-order rule of
// zero/comm/comm_stats.h: a node's ranks together send G x the per-rank mean of
// inter-node bus bytes through it).
struct LinkFigures {
  double intra_node_bytes_per_s = 0;                // per rank
  double inter_node_bytes_per_s = 0;                // per node, each direction (all its NICs)
  double intra_latency_s = 0, inter_latency_s = 0;  // per algorithm step
};

// The host side of offload (a preset's "host" block; 0: not known).
struct HostFigures {
  double pcie_bytes_per_s = 0;      // device <-> host, each direction, per GPU
  double adamw_elements_per_s = 0;  // the host AdamW's rate for one GPU's share of cores
  double nvme_bytes_per_s = 0;      // per GPU, reads and writes together
  std::string source;
  bool known() const { return pcie_bytes_per_s > 0 && adamw_elements_per_s > 0; }
};

struct NetworkModel {
  std::string source;             // where the numbers come from, for the output
  std::vector<CallCurve> curves;  // measured; used when not empty
  LinkFigures link;               // otherwise
  HostFigures host;               // offload's host side, where known
  // Calls are Open MPI's (an emulated cluster, commbench over MPI): two
  // non-blocking calls in flight progress side by side.
  bool open_mpi = false;
  // How a rooted reduce travels (link_load.h): a chain on NCCL and on an
  // emulated cluster (scripts/cluster.sh sets libnbc's chain), libnbc's own
  // choice under a plain Open MPI launch.
  ReduceAlgorithm reduce_algorithm = ReduceAlgorithm::Chain;
  // The layout curves were measured at (0: not measured; a preset's or a
  // cluster's link scales to any layout, a curve does not).
  int measured_world = 0, measured_ranks_per_node = 0;
  int measured_group_size = 0;    // commbench --group-size: ranks per measuring group
  int measured_group_stride = 1;  // commbench --group-stride: distance of a group's ranks
  // Seconds for one call alone on the network. Throws std::runtime_error
  // when curves lack the primitive.
  double call_seconds(const PlannedCall& c, int world, const NodeMap& nodes) const;
  // The links the call keeps busy (from the link figures, or from figures
  // fitted to its primitive's curve).
  LinkLoad call_load(const PlannedCall& c, int world, const NodeMap& nodes) const;
};

struct ComputeTimes {
  double micro_step_s = 0;  // forward + backward of one micro-step on one rank
  double optimizer_s = 0;   // the optimizer step over the whole model on one rank
  std::string source;
  std::string measured_for;  // the model and micro-batch a measurement timed; "" if given
};

struct StepTimePrediction {
  double compute_s = 0;    // forward, backward and optimizer, without waiting
  double optimizer_s = 0;  // of which the optimizer (offload: from the gradient copies' end)
  double comm_s = 0;       // every call's time, added up
  double exposed_s = 0;    // the communication the compute does not hide
  double step_s = 0;       // compute + exposed
  std::array<double, static_cast<int>(Primitive::kCount)> comm_by_primitive_s{};
};

// One steady optimizer step of `plan` with `micro_steps` micro-steps. The
// optimizer updates the whole model at stage 0, a 1/W shard at stages 1-3.
StepTimePrediction predict_step(const StepPlan& plan, int world, int micro_steps,
                                const NodeMap& nodes, const NetworkModel& net,
                                const ComputeTimes& compute);

}  // namespace zt
