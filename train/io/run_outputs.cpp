#include "train/io/run_outputs.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>

#include "data/input/input_file.h"
#include "data/shard.h"
#include "train/io/atomic_file.h"
#include "train/io/host_identity.h"
#include "train/io/json_writer.h"
#include "zero/analysis/memory_formula.h"
#include "zero/layout/mics_groups.h"
#include "zero/optim/offload_store.h"

namespace zt {
namespace {

std::string format_duration(double s) {
  char buf[32];
  const long t = static_cast<long>(s + 0.5);
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t / 60) % 60);
  else std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  return buf;
}

}  // namespace

RunOutputs::RunOutputs(const std::string& run_dir, bool writer) : dir_(run_dir), writer_(writer) {}

RunOutputs::~RunOutputs() = default;

void RunOutputs::write_config(const std::string& config_yaml) {
  if (writer_) write_file_atomic(dir_ + "/config.yaml", config_yaml);
}

// The step of one whole metrics record, or -1 for a cut or garbled line.
int64_t record_step(const std::string& line) {
  const size_t p = line.find("\"step\":");
  if (p == std::string::npos || line.empty() || line.front() != '{' || line.back() != '}')
    return -1;
  char* end = nullptr;
  errno = 0;
  const long long step = std::strtoll(line.c_str() + p + 7, &end, 10);
  if (errno != 0 || end == line.c_str() + p + 7 || (*end != ',' && *end != '}') || step < 1)
    return -1;
  return step;
}

int64_t last_logged_step(const std::string& run_dir) {
  std::string log;
  try {
    log = read_small_file(run_dir + "/metrics.jsonl", "metrics log", kMetricsMaxBytes);
  } catch (const DataError&) {
    return 0;
  }
  int64_t last = 0;
  size_t at = 0;
  for (size_t nl; (nl = log.find('\n', at)) != std::string::npos; at = nl + 1)
    last = std::max(last, record_step(log.substr(at, nl - at)));
  return last;
}

void RunOutputs::open_metrics(int64_t start_step) {
  if (!writer_) return;
  const std::string path = dir_ + "/metrics.jsonl";
  std::string kept;
  if (start_step > 0) {
    std::string old;
    try {
      old = read_small_file(path, "metrics log", kMetricsMaxBytes);
    } catch (const DataError&) {
      // No log to keep (or an unreadable one): the resumed run starts a new one.
    }
    // Whole records of steps up to the checkpoint's; a cut or garbled line goes.
    size_t at = 0;
    for (size_t nl; (nl = old.find('\n', at)) != std::string::npos; at = nl + 1) {
      const std::string line = old.substr(at, nl - at);
      const int64_t step = record_step(line);
      if (step >= 1 && step <= start_step) kept += line + "\n";
    }
  }
  write_file_atomic(path, kept);
  metrics_.reset(new AppendFile(path));
}

void RunOutputs::step(const StepRecord& r, int total, double tok_s, double elapsed, int done,
                      int log_every) {
  if (!writer_) return;
  const double eta = elapsed / std::max(1, done) * (total - r.step);
  const bool print = r.val_loss >= 0 || r.step == total || r.step == 1 ||
                     (log_every > 0 && r.step % log_every == 0);
  if (print) {
    if (r.emulated)
      std::printf(
          "step %5lld/%d | compute emulated: no loss | lr %.2e | %.1f ms | %.0f tok/s | ETA %s",
          static_cast<long long>(r.step), total, r.lr, r.ms, tok_s, format_duration(eta).c_str());
    else
      std::printf("step %5lld/%d | loss %.4f | norm %.4f | lr %.2e | %.1f ms | %.0f tok/s | ETA %s",
                  static_cast<long long>(r.step), total, r.loss, r.grad_norm, r.lr, r.ms, tok_s,
                  format_duration(eta).c_str());
    if (r.val_loss >= 0) std::printf(" | val %.4f", r.val_loss);
    std::printf("\n");
    std::fflush(stdout);
  }
  JsonObject o;
  o.add("step", r.step);
  if (r.emulated) o.raw("loss", "null").raw("grad_norm", "null").add("lr", r.lr);
  else o.add("loss", r.loss).add("lr", r.lr).add("grad_norm", r.grad_norm);
  o.add("ms", r.ms);
  // Wall clock, so a failure's cost can be read off the records around it.
  o.add("time",
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  if (r.val_loss >= 0) o.add("val_loss", r.val_loss);
  if (r.snapshot_copy_ms >= 0)
    o.add("snapshot_copy_ms", r.snapshot_copy_ms).add("snapshot_wait_ms", r.snapshot_wait_ms);
  if (r.hellaswag_examples >= 0) {
    const double n = static_cast<double>(std::max<int64_t>(r.hellaswag_examples, 1));
    JsonObject h;
    h.add("acc", r.hellaswag_correct / n)
        .add("acc_norm", r.hellaswag_correct_norm / n)
        .add("correct", r.hellaswag_correct)
        .add("correct_norm", r.hellaswag_correct_norm)
        .add("examples", r.hellaswag_examples);
    o.add("hellaswag", h);
  }
  metrics_->append_line(o.str());
}

void RunOutputs::sample(int64_t step, const std::string& text) {
  if (!writer_) return;
  std::printf("---- sample at step %lld ----\n%s\n----\n", static_cast<long long>(step),
              text.c_str());
  std::fflush(stdout);
}

namespace {

double median_step_ms(const RunSummary& s) {
  std::vector<double> ms = s.step_ms;
  std::sort(ms.begin(), ms.end());
  return ms.empty() ? 0 : ms[ms.size() / 2];
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// summary.json's "snapshots": sizes from the layout, times measured per
// joined copy (slowest rank); the overhead is the median wait over the median step.
std::string json_numbers(const std::vector<double>& xs) {
  std::string out = "[";
  for (size_t i = 0; i < xs.size(); i++) out += (i ? "," : "") + json_number(xs[i]);
  return out + "]";
}

JsonObject pipeline_json(const PipelineFigures& f) {
  return JsonObject()
      .add("stages", f.stages)
      .add("schedule", f.schedule)
      .add("micro_batches", f.micro_batches)
      .add("bubble_formula", f.bubble_formula)
      .raw("recv_wait_ms_median_by_stage", json_numbers(f.recv_wait_ms_median))
      .raw("recv_wait_fraction_by_stage", json_numbers(f.recv_wait_fraction));
}

JsonObject snapshots_json(const SnapshotFigures& f, double step_ms_median) {
  const double wait = median_of(f.wait_ms);
  return JsonObject()
      .add("every", f.every)
      .add("region_bytes_rank0", f.region_bytes)
      .add("node_bytes_rank0_node", f.node_bytes)
      .add("node_ranks", f.node_ranks)
      .add("copies_joined", static_cast<uint64_t>(f.copy_ms.size()))
      .add("copy_ms_median_measured", median_of(f.copy_ms))
      .add("wait_ms_median_measured", wait)
      .add("wait_fraction_of_step_median", step_ms_median > 0 ? wait / step_ms_median : 0);
}

// summary.json's "comm": run totals per primitive, per step, and per step by
// purpose; and the start-up calls, which the totals leave out.
JsonObject comm_json(const RunSummary& s) {
  JsonObject comm, per_step, by_purpose, by_dimension;
  const int64_t n = std::max<int64_t>(1, s.steps_this_run);
  auto per_step_of = [&](const PrimitiveStats& c) {
    return JsonObject()
        .add("calls", static_cast<double>(c.calls) / n)
        .add("bytes", static_cast<double>(c.bytes) / n)
        .add("bus_bytes", c.bus_bytes / n)
        .add("inter_node_bus_bytes", c.inter_node_bus_bytes / n);
  };
  for (int i = 0; i < static_cast<int>(Primitive::kCount); i++) {
    const Primitive p = static_cast<Primitive>(i);
    const PrimitiveStats& c = s.comm[p];
    comm.add(primitive_name(p), JsonObject()
                                    .add("calls", c.calls)
                                    .add("bytes", c.bytes)
                                    .add("bus_bytes", c.bus_bytes)
                                    .add("inter_node_bus_bytes", c.inter_node_bus_bytes)
                                    .add("seconds", c.seconds));
    per_step.add(primitive_name(p), per_step_of(c));
  }
  for (int u = 0; u < static_cast<int>(Purpose::kCount); u++) {
    JsonObject prims;
    for (int i = 0; i < static_cast<int>(Primitive::kCount); i++)
      prims.add(primitive_name(static_cast<Primitive>(i)), per_step_of(s.comm.by_purpose[u][i]));
    by_purpose.add(purpose_name(static_cast<Purpose>(u)), prims);
  }
  for (int u = 0; u < static_cast<int>(Dimension::kCount); u++) {
    JsonObject prims;
    for (int i = 0; i < static_cast<int>(Primitive::kCount); i++)
      prims.add(primitive_name(static_cast<Primitive>(i)), per_step_of(s.comm.by_dimension[u][i]));
    by_dimension.add(dimension_name(static_cast<Dimension>(u)), prims);
  }
  comm.add("per_step", per_step);
  comm.add("per_step_by_purpose", by_purpose);
  comm.add("per_step_by_dimension", by_dimension);
  JsonObject startup;
  for (int i = 0; i < static_cast<int>(Primitive::kCount); i++) {
    const PrimitiveStats& c = s.startup.comm.by_primitive[i];
    startup.add(primitive_name(static_cast<Primitive>(i)),
                JsonObject().add("calls", c.calls).add("bytes", c.bytes));
  }
  startup.add("barriers", s.startup.barriers);
  comm.add("startup", startup);
  comm.add("exposed_seconds", s.comm.exposed_seconds);
  comm.add("exposed_seconds_per_step", s.comm.exposed_seconds / n);
  comm.add("nodes", s.nodes).add("ranks_per_node", s.ranks_per_node);
  comm.add("note",
           "bytes per rank; inter_node_bus_bytes averaged over the ranks: the bus bytes a ring "
           "in rank order sends to another node");
  return comm;
}

// Off the device (zero.offload_optimizer / offload_param): host memory and NVMe files.
JsonObject off_device_json(const MemoryLedger& l, const StateBytes& formula) {
  JsonObject o;
  const uint64_t states = l.current(MemCategory::Params) + l.current(MemCategory::Grads) +
                          l.current(MemCategory::Optimizer);
  o.add("params", l.current(MemCategory::Params))
      .add("optimizer", l.current(MemCategory::Optimizer))
      .add("comm_buffers", l.peak(MemCategory::CommBuffers))
      .add("model_states", states)
      .add("model_states_formula", formula.total());
  return o;
}

// summary.json's "memory": the allocator's bytes per rank beside the formulas.
JsonObject memory_json(const RunSummary& s) {
  JsonObject mem;
  const MemoryLedger& L = *s.ledger;
  ZeroConfig z = s.zero;
  z.stage = s.stage;
  const ModelStatesPlacement where =
      model_states_placement(z, s.padded_params, s.world,
                             s.dtype_bytes == 4 ? DType::F32 : DType::BF16, s.persistent_bytes);
  static const MemoryLedger no_host;
  JsonObject host = off_device_json(s.host_ledger ? *s.host_ledger : no_host, where.host);
  JsonObject nvme = off_device_json(nvme_ledger(), where.nvme);
  const uint64_t states = L.current(MemCategory::Params) + L.current(MemCategory::Grads) +
                          L.current(MemCategory::Optimizer);
  mem.add("params", L.current(MemCategory::Params))
      .add("grads", L.current(MemCategory::Grads))
      .add("optimizer", L.current(MemCategory::Optimizer))
      .add("activations", L.peak(MemCategory::Activations))
      .add("recompute", s.recompute)
      .add("activations_per_micro_batch", s.activations_per_micro_batch)
      .add("activations_per_micro_batch_formula", s.activations_per_micro_batch_formula)
      .add("comm_buffers", L.peak(MemCategory::CommBuffers))
      .add("model_states", states)
      .add("model_states_formula", where.device.total())
      .add("model_states_paper",
           model_states_bytes(s.stage, s.padded_params, shard_ranks(z, s.world), 2, 2))
      .add("stage3_persistent_params", s.persistent_bytes)
      .add("stage3_live_params_peak", s.live_params_peak_bytes)
      .add("peak_total", L.peak_total())
      .add("offload_optimizer", s.zero.offload_optimizer.device)
      .add("offload_param", s.zero.offload_param.device)
      .add("host", host)
      .add("nvme", nvme)
      .add("offload_grad_bytes_early", s.offload_grad_bytes_early)
      .add("offload_grad_bytes_at_step", s.offload_grad_bytes_at_step)
      .add("offload_param_read_ahead_bytes", s.offload_param_read_ahead_bytes)
      .add("note",
           "bytes per rank from the allocator; params/grads/optimizer held at the end, "
           "activations/comm_buffers at their peak (activations: every model's, the sampler's "
           "and HellaSwag's included; activations_per_micro_batch: the training model's); "
           "formulas on the padded parameter count, stage 3's plus its persistent parameters; "
           "host/nvme: offloaded states (the host's with the offload staging and chunk buffers) "
           "and files; offload_grad_bytes_early/at_step: the last step's gradients copied to the "
           "host as the engine reported them final (overlapping backward) and at the step; "
           "offload_param_read_ahead_bytes: parameter pieces the gathers found read ahead from "
           "NVMe, over the run");
  return mem;
}

JsonObject zero_json(const RunSummary& s) {
  JsonObject zero;
  zero.add("stage", s.stage)
      .add("grad_path", s.grad_path)
      .add("reduce_bucket_size", static_cast<int64_t>(s.zero.reduce_bucket_size))
      .add("allgather_bucket_size", static_cast<int64_t>(s.zero.allgather_bucket_size))
      .add("overlap_comm", s.zero.overlap_comm)
      .add("allgather_bucketed", s.zero.allgather_bucketed);
  return zero;
}

JsonObject timing_json(const RunSummary& s) {
  JsonObject timing;
  timing.add("micro_steps", s.micro_steps)
      .add("compute_ms_per_micro_step", s.compute.micro_step_ms)
      .add("optimizer_ms", s.compute.optimizer_ms)
      .add("note",
           "compute = wall time less the time blocked waiting for collectives; per step the "
           "slowest rank's, the median over the steps after the first; per micro-step: forward + "
           "backward");
  return timing;
}

JsonObject host_sharing_json(const RunSummary& s) {
  JsonObject h;
  h.add("ranks_on_machine", s.ranks_on_machine)
      .add("cores", s.cores)
      .add("blas_threads_per_rank", s.cpu_threads)
      .add("mpi_waits", s.waits_sleep ? "sleep" : "spin")
      .add("note",
           "ranks_on_machine: every rank of an emulated cluster, else the node's; BLAS threads = "
           "cores / ranks_on_machine (at least 1); MPI waits sleep between tests where the ranks "
           "outnumber the cores");
  return h;
}

JsonObject emulated_json(const EmulatedDurations& d) {
  JsonObject e;
  e.add("micro_step_ms", d.micro_step_ms)
      .add("optimizer_ms", d.optimizer_ms)
      .add("forward_fraction", d.forward_fraction)
      .add("time_scale", d.time_scale)
      .add("source", d.source)
      .add("device", d.source_device)
      .add("note",
           "stated durations (time_scale applied) waited for instead of the model's arithmetic; "
           "optimizer_ms is the whole model's, each rank waits its shard's share; no loss is "
           "computed");
  return e;
}

}  // namespace

void RunOutputs::summary(const RunSummary& s) {
  if (!writer_) return;
  const double median = median_step_ms(s);
  JsonObject o;
  o.add("world_size", s.world)
      .add("steps", s.steps_done)
      .add("steps_this_run", s.steps_this_run)
      .add("compute_mode", s.emulated ? "emulated" : "real");
  if (s.emulated)
    o.raw("final_train_loss", "null").add("emulated_compute", emulated_json(*s.emulated));
  else o.add("final_train_loss", s.final_train_loss).raw("emulated_compute", "null");
  if (s.final_val_loss >= 0) o.add("final_val_loss", s.final_val_loss);
  else o.raw("final_val_loss", "null");
  if (s.initial_val_loss >= 0) o.add("initial_val_loss", s.initial_val_loss);
  else o.raw("initial_val_loss", "null");
  o.add("tokens_per_second", s.tokens_per_second)
      .add("step_ms_median", median)
      .add("params", static_cast<uint64_t>(s.params))
      .add("padded_params", static_cast<uint64_t>(s.padded_params))
      .add("device", s.device)
      .add("host_sharing", host_sharing_json(s))
      .raw("config", s.config_json)
      .add("zero", zero_json(s))
      .add("comm", comm_json(s))
      .add("memory", memory_json(s))
      .add("timing", timing_json(s));
  if (s.snapshots) o.add("snapshots", snapshots_json(*s.snapshots, median));
  else o.raw("snapshots", "null");
  if (s.pipeline) o.add("pipeline", pipeline_json(*s.pipeline));
  else o.raw("pipeline", "null");
  if (s.cluster_text.empty()) o.raw("cluster", "null");
  else o.raw("cluster", s.cluster_text);
  o.add("host", host_identity_json());
  const std::string path = dir_ + "/summary.json";
  write_file_atomic(path, o.str() + "\n");
  if (s.emulated)
    std::printf("summary: %s (%.0f tok/s, median %.1f ms/step, compute emulated: no loss)\n",
                path.c_str(), s.tokens_per_second, median);
  else
    std::printf("summary: %s (%.0f tok/s, median %.1f ms/step, final loss %.4f)\n", path.c_str(),
                s.tokens_per_second, median, s.final_train_loss);
}

}  // namespace zt
