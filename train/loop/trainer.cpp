// `zerotrain train`: load and check everything, build the backend, the data
// loaders, the model and the ZeRO stage; then step: micro-batches through
// forward/backward (gradients flow into ZeRO through the unit hooks), the ZeRO
// step, metrics, evaluation, samples, checkpoints; finally the run summary.
#include "train/loop/trainer.h"

#include <mpi.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>

#include "model/tensor_split.h"
#include "train/cli/command_registry.h"
#include "train/config/zero_setup.h"
#include "train/io/llmc_model_file.h"
#include "train/io/output_target.h"
#include "train/io/run_outputs.h"
#include "train/loop/failure_watch.h"
#include "train/loop/fault_stop.h"
#include "train/loop/init_weights.h"
#include "train/loop/lr_schedule.h"
#include "train/loop/run_setup.h"
#include "train/loop/run_statistics.h"
#include "train/loop/sampler.h"
#include "zero/schedule/deepspeed_startup.h"

namespace zt {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int sig) { g_stop_signal = sig; }

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string default_run_dir(const std::string& config_path) {
  std::string base = config_path.substr(config_path.find_last_of('/') + 1);
  return "runs/" + base.substr(0, base.find_last_of('.'));
}

void make_dirs(const std::string& path) {
  for (size_t p = path.find('/', 1);; p = path.find('/', p + 1)) {
    mkdir(path.substr(0, p).c_str(), 0755);
    if (p == std::string::npos) break;
  }
}

// Mean loss over the first `batches` validation batches, in file order. Every
// rank of a tensor group holds the same losses; with a pipeline only the last
// stage's ranks hold them.
double evaluate(RunModels& m, DataLoader& val, int batches, int B, int T, int world) {
  std::vector<int> in(static_cast<size_t>(B) * T), tgt(in.size());
  double sum = 0;
  for (int j = 0; j < batches; j++) {
    val.micro_batch(j, 0, in.data(), tgt.data());
    sum += m.pipeline ? m.pipeline->evaluate(*m.stage, m.hooks(), in.data(), tgt.data())
                      : m.model->forward_loss(in.data(), tgt.data(), m.hooks());
  }
  const int holding = world / m.grid.pipeline;
  return sum_over_ranks(sum) / (static_cast<double>(batches) * B * T * holding);
}

}  // namespace

TrainArgs parse_train_args(const std::vector<std::string>& args) {
  const CliArgs c = command_args("train", args);
  TrainArgs a;
  a.config_path = c.positional()[0];
  a.overrides = c.all("--set");
  a.run_dir = c.get("--run-dir", default_run_dir(a.config_path));
  a.resume = c.has("--resume");
  a.recover = c.has("--recover");
  if (a.recover && a.resume)
    c.fail("--recover and --resume: give one (--recover falls back to --resume's checkpoint)");
  a.init_from = c.get("--init-from");
  a.deepspeed = c.get("--deepspeed");
  if (a.recover && !a.init_from.empty()) c.fail("--recover and --init-from: give one");
  if (const std::string problem = output_dir_problem(a.run_dir); !problem.empty())
    c.fail("--run-dir " + a.run_dir + ": " + problem);
  return a;
}

namespace {

// DeepSpeed's start-up calls for the release emulated. deepspeed.initialize
// issues them (the engine's parameter broadcast, DeepSpeedEngine.__init__ ->
// _configure_distributed_model; stage 3's zero.Init in the optimizer's
// construction) and returns the engine whose load_checkpoint a resuming script
// calls after it, so every run issues them before loading any state. Every
// rank continues from rank 0's `w`. The comm trace marks them, and what else
// precedes the first step, with step -1, as DeepSpeed's traces do.
StartupCounts issue_deepspeed_startup(const RunSettings& r, RunModels& m, float* w) {
  Ops& ops = *m.rt.ops;
  Communicator& zc = m.zero_comm();  // over the data-parallel group with tensor parallelism
  const ZeroSetup setup = zero_setup(r.cfg, m.table, m.rt.comm->nodes().ranks_per_node());
  const std::vector<StartupCall> calls =
      deepspeed_startup_calls(setup, m.table, zc.world(), ops.dtype());
  StartupCounts counts;
  const CommStats before = m.rt.comm->stats();
  m.rt.comm->set_step(-1);
  issue_startup_calls(calls, m.table, ops.dtype(), ops, zc, w);
  counts.comm = m.rt.comm->stats().minus(before);
  for (const StartupCall& c : calls) counts.barriers += c.kind == StartupCall::Barrier;
  return counts;
}

// 4. Initial state: a checkpoint, an llm.c model file, or GPT-2 initialisation;
// before anything is written, so that a checkpoint that does not verify or
// does not fit this config leaves the run directory as it was. Returns the
// first step to run.
int64_t load_initial_state(const TrainArgs& a, const RunSettings& r, const CheckpointContext& ckpt,
                           RunModels& m, int rank, StartupCounts& startup) {
  const TokenizerIdentity& tokenizer = ckpt.tokenizer;
  // The model a script builds before deepspeed.initialize; a checkpoint replaces it.
  std::vector<float> w;
  const ParamTable whole(r.cfg.model);
  if (!a.init_from.empty()) w = read_llmc_model(a.init_from, whole);
  else {
    w.resize(whole.total());
    init_gpt2_weights(whole, r.cfg.train.seed, w.data());
  }
  // A tensor shard or pipeline stage starts from its part of the whole model's weights.
  if (m.grid.tensor > 1 || m.grid.pipeline > 1) w = take_shard(whole, m.table, w.data());
  startup = issue_deepspeed_startup(r, m, w.data());
  if (a.recover)
    return recover_initial_state(a.run_dir, r.cfg.model, ckpt.part, tokenizer, *m.engine,
                                 *m.rt.comm);
  ResumePoint resumed;
  if (a.resume) {
    resumed = resume_from_checkpoint(
        a.run_dir, r.cfg.model, ckpt.part, tokenizer, *m.engine, [&](const std::string& why) {
          if (rank != 0) return;
          std::fprintf(stderr, "zerotrain: --resume: rejected %s\n", why.c_str());
          std::fflush(stderr);
        });
  }
  if (!resumed.dir.empty()) {
    if (rank == 0) {
      std::printf("resumed from %s (step %lld, saved by %d ranks at stage %d", resumed.dir.c_str(),
                  static_cast<long long>(resumed.meta.step), resumed.meta.world,
                  resumed.meta.stage);
      if (resumed.rejected > 0)
        std::printf("; %d newer checkpoint%s rejected", resumed.rejected,
                    resumed.rejected == 1 ? "" : "s");
      std::printf(")\n");
      std::fflush(stdout);
    }
    return resumed.meta.step;
  }
  m.engine->init_weights(w.data());
  if (rank == 0 && a.resume) {
    std::printf("--resume: no complete checkpoint in %s, starting fresh\n", a.run_dir.c_str());
    std::fflush(stdout);
  }
  return 0;
}

// 5. Outputs: the run directory, its config, the comm traces and the metrics log.
void open_run_outputs(const TrainArgs& a, const RunSettings& r, RunModels& m, RunOutputs& out,
                      int64_t start_step, int rank) {
  if (rank == 0) {
    make_dirs(a.run_dir);
    out.write_config(r.config_yaml);
  }
  if (r.cfg.system.comm_trace) {
    char name[64];
    std::snprintf(name, sizeof name, "/comm_trace_rank%d.jsonl", rank);
    barrier_all();
    m.rt.comm->open_trace(a.run_dir + name);
  }
  out.open_metrics(start_step);
}

// What the loop measured, for the summary.
struct LoopTotals {
  int64_t start_step = 0, step = 0;  // step: optimizer steps completed
  std::vector<double> step_ms;
  std::vector<ComputeSample> compute_ms;
  std::vector<double> pipeline_wait_ms;
  double last_loss = 0, last_val = -1, initial_val = -1, timed_seconds = 0;
  int64_t timed_tokens = 0;
  CommStats comm_at_start;  // before the first training step: the summary counts steps only
  StartupCounts startup;
  SnapshotFigures snapshots;
};

struct StepResult {
  double loss = 0, norm = 0, ms = 0;
  ComputeSample compute{};
  double pipeline_wait_ms = 0;  // blocked in the pipeline's receives
};

// One optimizer step: the micro-steps' forward/backward into ZeRO, then its
// step; `adam_t` is AdamW's step count (1 at the run's first step, resumed runs
// continue it).
StepResult train_step(const RunSettings& r, RunModels& m, DataLoader& train_data, int64_t step,
                      int adam_t, double lr, std::vector<int>& in, std::vector<int>& tgt) {
  const Config& cfg = r.cfg;
  Ops& ops = *m.rt.ops;
  const double global_tokens = static_cast<double>(cfg.train.global_batch_tokens);
  const auto t0 = Clock::now();
  double loss_sum = 0, pipeline_wait_s = 0;
  const double exposed_at_start = m.rt.comm->stats().exposed_seconds;
  if (m.pipeline) {
    watch_position(step, "pipeline");
    const PipelineStepResult p = m.pipeline->train(
        *m.stage, *m.engine, m.hooks(),
        [&](int micro, int* in_k, int* tgt_k) { train_data.micro_batch(step, micro, in_k, tgt_k); },
        static_cast<float>(1.0 / global_tokens));
    loss_sum = p.loss_sum;
    pipeline_wait_s = p.recv_wait_s;
  }
  for (int micro = 0; !m.pipeline && micro < r.accum; micro++) {
    watch_position(step, "data");
    train_data.micro_batch(step, micro, in.data(), tgt.data());
    watch_position(step, "forward_backward");
    m.engine->begin_micro_step(micro, r.accum);
    if (m.emulated) m.emulated->forward_backward(m.hooks());
    else
      loss_sum += m.model->forward_backward(in.data(), tgt.data(),
                                            static_cast<float>(1.0 / global_tokens), m.hooks());
    watch_position(step, "reduce");
    m.engine->end_micro_step();
  }
  ops.synchronize();
  // The optimizer step changes what the snapshot copy reads; its wait stays out
  // of the measured compute.
  if (m.snapshots) m.snapshots->join();
  const auto t_opt = Clock::now();
  const double exposed_at_opt = m.rt.comm->stats().exposed_seconds;
  OptimSettings os{static_cast<float>(lr), static_cast<float>(cfg.train.beta1),
                   static_cast<float>(cfg.train.beta2), static_cast<float>(cfg.train.eps),
                   static_cast<float>(cfg.train.weight_decay)};
  StepResult res;
  watch_position(step, "zero_step");
  res.norm = m.engine->step(os, adam_t);
  ops.synchronize();
  // Compute = wall time less the time blocked in the communicator's wait().
  const double exposed_now = m.rt.comm->stats().exposed_seconds;
  res.compute = {
      (std::chrono::duration<double>(t_opt - t0).count() - (exposed_at_opt - exposed_at_start)) *
          1e3 / r.accum,
      (seconds_since(t_opt) - (exposed_now - exposed_at_opt)) * 1e3};
  // Every rank of a tensor group holds the same losses (the last stage's only).
  res.loss = sum_over_ranks(loss_sum) / (global_tokens * m.grid.tensor);
  res.pipeline_wait_ms = pipeline_wait_s * 1e3;
  res.ms = seconds_since(t0) * 1e3;
  return res;
}

// After a step: validation, HellaSwag, the progress line and metrics record,
// a sample and a checkpoint, each when due.
void finish_step(const RunSettings& r, RunModels& m, RunData& d, RunOutputs& out,
                 const CheckpointContext& ckpt, LoopTotals& t, StepRecord rec, double run_seconds,
                 int rank, int world) {
  const Config& cfg = r.cfg;
  const int64_t step = t.step;
  const bool last = step + 1 == cfg.train.steps;
  watch_position(step, "eval");
  if (d.val && ((step + 1) % cfg.train.eval_every == 0 || last))
    rec.val_loss = t.last_val = evaluate(m, *d.val, cfg.train.eval_batches, r.B, r.T, world);
  const bool score = m.hellaswag && ((step + 1) % cfg.train.hellaswag_every == 0 || last);
  HellaswagResult h;
  if (score) {
    // The examples are split over the data-parallel ranks; a tensor group's
    // ranks score the same ones together, and a pipeline's stages all hold
    // the last stage's losses, so each counts them once.
    TokenLossForward through_stages;
    if (m.pipeline)
      through_stages = [&](const int* in, const int* tgt) -> const std::vector<float>& {
        return m.pipeline->forward_losses(*m.hellaswag, m.hooks(), in, tgt);
      };
    h = score_hellaswag(
        *m.hellaswag, m.hooks(), d.hellaswag, m.grid.data_index(rank), m.grid.data,
        [&](double x) { return sum_over_ranks(x) / (m.grid.tensor * m.grid.pipeline); },
        through_stages);
    rec.hellaswag_examples = h.examples;
    rec.hellaswag_correct = h.correct;
    rec.hellaswag_correct_norm = h.correct_norm;
  }
  out.step(rec, cfg.train.steps,
           static_cast<double>(cfg.train.global_batch_tokens) / (rec.ms / 1e3), run_seconds,
           static_cast<int>(step + 1 - t.start_step), cfg.train.log_every);
  if (score && rank == 0)
    std::printf("step %5lld | %s\n", static_cast<long long>(step + 1),
                describe_hellaswag(h, cfg.train.hellaswag_file).c_str());
  watch_position(step, "sample");
  if (m.sampler && ((step + 1) % cfg.train.sample_every == 0 || last)) {
    SampleSettings ss{cfg.train.sample_tokens, cfg.train.temperature, cfg.train.top_k,
                      cfg.train.seed + static_cast<uint64_t>(step), d.tokenizer->vocab_size()};
    std::vector<int> prompt = sample_prompt(*d.tokenizer, "");
    const std::vector<int> toks =
        m.pipeline ? m.pipeline->sample(*m.sampler, m.hooks(), std::move(prompt), ss)
                   : sample_tokens(*m.sampler, m.hooks(), std::move(prompt), ss);
    if (rank == 0) out.sample(step + 1, sample_text(*d.tokenizer, toks));
  }
  if (cfg.train.checkpoint_every > 0 && ((step + 1) % cfg.train.checkpoint_every == 0 || last)) {
    watch_position(step, "checkpoint");
    save_checkpoint(ckpt, step + 1, *m.engine, rank, world);
  }
}

// 6. The loop, from t.start_step until the last step or a stop signal.
void run_steps(const RunSettings& r, RunModels& m, RunData& d, RunOutputs& out,
               const CheckpointContext& ckpt, LoopTotals& t, int rank, int world) {
  const Config& cfg = r.cfg;
  std::vector<int> in(static_cast<size_t>(r.B) * r.T), tgt(in.size());
  const auto run_t0 = Clock::now();
  // Like llm.c, evaluate the untrained model too: the curve starts at step 0.
  if (d.val && t.start_step == 0) {
    watch_position(0, "eval");
    t.initial_val = evaluate(m, *d.val, cfg.train.eval_batches, r.B, r.T, world);
    if (rank == 0)
      std::printf("step     0/%d | val %.4f (before training)\n", cfg.train.steps, t.initial_val);
  }
  t.comm_at_start = m.rt.comm->stats();
  for (t.step = t.start_step; t.step < cfg.train.steps; t.step++) {
    if (sum_over_ranks(g_stop_signal != 0 ? 1.0 : 0.0) > 0) break;
    r.fault.maybe_fail(rank, t.step);
    m.rt.comm->set_step(t.step);
    const double lr = learning_rate(cfg.train, static_cast<int>(t.step));
    const int adam_t = static_cast<int>(t.step) + 1;
    const StepResult s = train_step(r, m, *d.train, t.step, adam_t, lr, in, tgt);
    t.compute_ms.push_back(s.compute);
    if (m.pipeline) t.pipeline_wait_ms.push_back(s.pipeline_wait_ms);
    t.last_loss = s.loss;
    t.step_ms.push_back(s.ms);
    if (t.step > t.start_step || cfg.train.steps - t.start_step == 1) {
      t.timed_seconds += s.ms / 1e3;
      t.timed_tokens += cfg.train.global_batch_tokens;
    }
    StepRecord rec{t.step + 1, s.loss, lr, s.norm, s.ms, -1, r.emulated.has_value()};
    if (m.snapshots) {
      record_snapshot_costs(*m.snapshots, rec, t.snapshots);
      if (t.step + 1 < cfg.train.steps) m.snapshots->start_if_due(t.step + 1);
    }
    finish_step(r, m, d, out, ckpt, t, rec, seconds_since(run_t0), rank, world);
  }
}

// Collective: per stage, the mean over its ranks of each rank's median wait in
// the pipeline's receives and of that wait over its median step.
PipelineFigures pipeline_figures(const RunSettings& r, const RunModels& m, const LoopTotals& t,
                                 int world) {
  auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  // Microseconds, to travel as integers.
  const std::vector<uint64_t> all =
      allgather_u64({static_cast<uint64_t>(median(t.pipeline_wait_ms) * 1e3),
                     static_cast<uint64_t>(median(t.step_ms) * 1e3)});
  PipelineFigures f;
  f.stages = m.grid.pipeline;
  f.micro_batches = r.accum;
  f.schedule = r.cfg.parallel.pipeline_schedule;
  f.bubble_formula = static_cast<double>(f.stages - 1) / (f.micro_batches + f.stages - 1);
  f.recv_wait_ms_median.assign(static_cast<size_t>(f.stages), 0.0);
  f.recv_wait_fraction.assign(static_cast<size_t>(f.stages), 0.0);
  const double ranks_per_stage = static_cast<double>(world) / f.stages;
  for (int rank = 0; rank < world; rank++) {
    const size_t s = static_cast<size_t>(m.grid.pipeline_index(rank));
    const double wait = all[2 * rank] / 1e3, step = all[2 * rank + 1] / 1e3;
    f.recv_wait_ms_median[s] += wait / ranks_per_stage;
    f.recv_wait_fraction[s] += (step > 0 ? wait / step : 0.0) / ranks_per_stage;
  }
  return f;
}

// 7. The summary's figures; `comm` holds the training steps' counts only.
RunSummary run_summary(const RunSettings& r, const RunModels& m, const LoopTotals& t,
                       const CommStats& comm, const std::string& config_json, int world) {
  const Config& cfg = r.cfg;
  Ops& ops = *m.rt.ops;
  ZeroEngine& engine = *m.engine;
  RunSummary s;
  s.world = world;
  s.steps_done = t.step;
  s.steps_this_run = t.step - t.start_step;
  s.final_train_loss = t.last_loss;
  s.final_val_loss = t.last_val;
  s.initial_val_loss = t.initial_val;
  s.tokens_per_second = t.timed_seconds > 0 ? t.timed_tokens / t.timed_seconds : 0;
  s.step_ms = t.step_ms;
  s.compute = compute_medians(t.compute_ms);
  s.micro_steps = r.accum;
  s.params = m.table.total();
  s.padded_params = engine.padded_params();
  s.config_json = config_json;
  s.stage = engine.stage();
  s.grad_path = engine.grad_path_key();
  s.zero = cfg.zero;
  s.comm = comm;
  s.startup = t.startup;
  s.ledger = &ops.ledger();
  s.host_ledger = &ops.services().host_ledger();
  s.offload_grad_bytes_early = engine.optimizer().grad_copy_bytes().early;
  s.offload_grad_bytes_at_step = engine.optimizer().grad_copy_bytes().at_step;
  s.offload_param_read_ahead_bytes = engine.param_read_ahead_bytes();
  s.dtype_bytes = static_cast<int>(dtype_size(ops.dtype()));
  s.device = ops.name();
  s.persistent_bytes = engine.persistent_param_bytes();
  s.live_params_peak_bytes = engine.live_params_peak_bytes();
  s.recompute = recompute_name(m.recompute);
  s.activations_per_micro_batch = m.model_activations;
  s.activations_per_micro_batch_formula = m.activations_formula;
  s.nodes = m.rt.comm->nodes().nodes();
  s.ranks_per_node = m.rt.comm->nodes().ranks_per_node();
  s.ranks_on_machine = m.rt.ranks_on_machine;
  s.cores = m.rt.cores;
  s.cpu_threads = m.rt.cpu_threads;
  s.waits_sleep = m.rt.waits_sleep;
  s.cluster_text = r.cluster;
  s.emulated = r.emulated ? &*r.emulated : nullptr;
  s.snapshots = m.snapshots ? &t.snapshots : nullptr;
  return s;
}

}  // namespace

int run_train(const TrainArgs& a) {
  int rank = 0, world = 1, local_rank = 0, local_size = 1;
  mpi_ranks(&rank, &world, &local_rank, &local_size);
  arm_fault_stop(rank, world, a.recover);
  const RunSettings settings = load_run_settings(a, world);
  const Grid grid = parallel_grid(settings.cfg, world);
  RunData data = load_run_data(settings, grid.data_index(rank), grid.data);
  RunModels models(settings, data);
  RunOutputs out(a.run_dir, rank == 0);
  if (rank == 0) print_run_header(a, settings, models, world);
  const CheckpointContext ckpt = checkpoint_context(a, settings, models);
  LoopTotals totals;
  if (settings.cfg.system.comm_trace) models.rt.comm->hold_trace();
  totals.start_step = load_initial_state(a, settings, ckpt, models, rank, totals.startup);
  models.snapshots = start_snapshots(a.run_dir, settings.cfg, ckpt.part, *models.engine,
                                     totals.start_step, rank, world);
  open_run_outputs(a, settings, models, out, totals.start_step, rank);
  std::signal(SIGTERM, on_stop_signal);
  std::signal(SIGINT, on_stop_signal);
  const FailureWatch failure_watch(settings.cfg.system, a.run_dir, *models.rt.comm);

  run_steps(settings, models, data, out, ckpt, totals, rank, world);
  watch_position(totals.step, "finish");
  const CommStats comm =
      with_job_mean_inter_node(models.rt.comm->stats().minus(totals.comm_at_start), world);
  RunSummary summary = run_summary(settings, models, totals, comm, ckpt.config_json, world);
  PipelineFigures pipeline;
  if (models.pipeline) {
    pipeline = pipeline_figures(settings, models, totals, world);
    summary.pipeline = &pipeline;
  }
  out.summary(summary);
  if (g_stop_signal != 0) {
    if (rank == 0)
      std::fprintf(stderr, "zerotrain: stopped by signal %d after step %lld\n",
                   static_cast<int>(g_stop_signal), static_cast<long long>(totals.step));
    return 128 + static_cast<int>(g_stop_signal);
  }
  if (models.snapshots) models.snapshots->remove_region();  // a failed run keeps it for --recover
  return 0;
}

}  // namespace zt
