// `zerotrain train`: load and check everything, build the backend, the data
// loaders, the model and the ZeRO stage; then step: micro-batches through
// forward/backward (gradients flow into ZeRO through the unit hooks), the ZeRO
// step, metrics, evaluation, samples, checkpoints; finally the run summary.
#include "train/trainer.h"

#include <mpi.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>

#include "data/input_file.h"
#include "data/json_reader.h"
#include "data/loader.h"
#include "data/shard.h"
#include "data/tokenizer.h"
#include "model/activation_memory.h"
#include "model/gpt.h"
#include "train/checkpoint.h"
#include "train/cluster_description.h"
#include "train/command_registry.h"
#include "train/data_fallback.h"
#include "train/deepspeed_import.h"
#include "train/fault_inject.h"
#include "train/hellaswag.h"
#include "train/init_weights.h"
#include "train/llmc_model_file.h"
#include "train/lr_schedule.h"
#include "train/run_outputs.h"
#include "train/runtime.h"
#include "train/sampler.h"
#include "train/zero_setup.h"
#include "zero/engine.h"

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

// Mean loss over the first `batches` validation batches, in file order.
double evaluate(GPT& model, ZeroEngine& engine, DataLoader& val, int batches, int B, int T,
                int world) {
  std::vector<int> in(static_cast<size_t>(B) * T), tgt(in.size());
  double sum = 0;
  for (int j = 0; j < batches; j++) {
    val.micro_batch(j, 0, in.data(), tgt.data());
    sum += model.forward_loss(in.data(), tgt.data(), engine);
  }
  return sum_over_ranks(sum) / (static_cast<double>(batches) * B * T * world);
}

}  // namespace

TrainArgs parse_train_args(const std::vector<std::string>& args) {
  const CliArgs c = command_args("train", args);
  TrainArgs a;
  a.config_path = c.positional()[0];
  a.overrides = c.all("--set");
  a.run_dir = c.get("--run-dir", default_run_dir(a.config_path));
  a.resume = c.has("--resume");
  a.init_from = c.get("--init-from");
  a.deepspeed = c.get("--deepspeed");
  return a;
}

// The median over the steps after the first (the first sets up buffers and
// connections) of each step's slowest rank: every collective waits for it, so
// the step's compute is its compute. Every rank has the same steps.
ComputeSample compute_medians(std::vector<ComputeSample> v) {
  if (v.size() > 1) v.erase(v.begin());
  auto median = [&](double ComputeSample::*field) {
    std::vector<double> mine, slowest(v.size());
    for (const ComputeSample& c : v) mine.push_back(c.*field);
    MPI_Allreduce(mine.data(), slowest.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX,
                  MPI_COMM_WORLD);
    std::sort(slowest.begin(), slowest.end());
    return slowest.empty() ? 0.0 : slowest[slowest.size() / 2];
  };
  return {median(&ComputeSample::micro_step_ms), median(&ComputeSample::optimizer_ms)};
}

// This rank's counts, with the inter-node bytes averaged over the ranks
// (each rank counts what it sends across; the summary speaks for the job).
CommStats with_job_mean_inter_node(CommStats c, int world) {
  std::vector<double> v;
  for (auto& p : c.by_primitive) v.push_back(p.inter_node_bus_bytes);
  for (auto& u : c.by_purpose)
    for (auto& p : u) v.push_back(p.inter_node_bus_bytes);
  std::vector<double> sum(v.size());
  MPI_Allreduce(v.data(), sum.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_SUM,
                MPI_COMM_WORLD);
  size_t i = 0;
  for (auto& p : c.by_primitive) p.inter_node_bus_bytes = sum[i++] / world;
  for (auto& u : c.by_purpose)
    for (auto& p : u) p.inter_node_bus_bytes = sum[i++] / world;
  return c;
}

int run_train(const TrainArgs& a) {
  int rank = 0, world = 1, local_rank = 0, local_size = 1;
  mpi_ranks(&rank, &world, &local_rank, &local_size);

  // 1. Configuration, complete and checked before anything is printed or done.
  Config cfg = load_config(a.config_path, a.overrides);
  std::vector<std::string> ds_warnings;
  if (!a.deepspeed.empty()) {
    apply_deepspeed_config(a.deepspeed, cfg, ds_warnings, world);
    validate_config(cfg);
  }
  validate_for_world(cfg, world);
  const std::vector<std::string> data_notes =
      apply_data_fallbacks(cfg.data, cfg.train.eval_every > 0);
  const FaultInjection fault = parse_fault_injection(cfg.system.fault_inject);
  const std::string cluster = read_cluster_description().json;
  const std::string config_yaml = config_to_yaml(cfg);
  const int accum = grad_accum_steps(cfg, world);
  const int B = cfg.train.micro_batch, T = cfg.model.seq_len;

  // 2. Data: shards are validated (header, size, every token) before anything else.
  DataLoader train_data(cfg.data.train, cfg.model.vocab_size, B, T, rank, world, accum,
                        cfg.train.seed, true);
  std::unique_ptr<DataLoader> val_data;
  if (cfg.train.eval_every > 0)
    val_data.reset(new DataLoader(cfg.data.val, cfg.model.vocab_size, B, T, rank, world, 1,
                                  cfg.train.seed, false));
  std::unique_ptr<Tokenizer> tokenizer;
  if (cfg.train.sample_every > 0 || cfg.train.hellaswag_every > 0) {
    tokenizer = make_tokenizer(cfg.data.tokenizer);
    if (tokenizer->vocab_size() > cfg.model.vocab_size)
      throw ConfigError("data.tokenizer " + cfg.data.tokenizer + " has " +
                        std::to_string(tokenizer->vocab_size()) +
                        " tokens, more than model.vocab_size " +
                        std::to_string(cfg.model.vocab_size));
  }
  HellaswagSet hellaswag;
  if (cfg.train.hellaswag_every > 0)
    hellaswag = tokenize_hellaswag(read_hellaswag(cfg.train.hellaswag_file), *tokenizer,
                                   cfg.model.vocab_size, cfg.train.hellaswag_file);

  // 3. Backend, communicator, model, ZeRO.
  Runtime rt = make_runtime(cfg.system);
  Ops& ops = *rt.ops;
  ParamTable table(cfg.model);
  check_offload_paths(cfg.zero);
  std::unique_ptr<ZeroEngine> engine = make_zero_engine(
      zero_setup(cfg, table, rt.comm->nodes().ranks_per_node()), table, ops, *rt.comm);
  const Recompute recompute = recompute_level(cfg);
  // The training model's activations, measured: it allocates them all here,
  // and its passes allocate nothing more (tests/test_recompute.cpp).
  const uint64_t activations_before = ops.ledger().current(MemCategory::Activations);
  GPT model(table, ops, B, T, recompute);
  const uint64_t model_activations =
      ops.ledger().current(MemCategory::Activations) - activations_before;
  // Forward-only models keep nothing for a backward: block's layout is the smallest.
  std::unique_ptr<GPT> sampler_model;
  if (cfg.train.sample_every > 0) sampler_model.reset(new GPT(table, ops, 1, T, Recompute::Block));
  std::unique_ptr<GPT> hellaswag_model;
  if (cfg.train.hellaswag_every > 0)
    hellaswag_model.reset(
        new GPT(table, ops, B, hellaswag_positions(hellaswag, T), Recompute::Block));

  RunOutputs out(a.run_dir, rank == 0);
  if (rank == 0) {
    for (const auto& w : ds_warnings) std::printf("deepspeed: %s\n", w.c_str());
    for (const auto& note : data_notes) std::printf("%s\n", note.c_str());
    if (!rt.device_note.empty()) std::printf("%s\n", rt.device_note.c_str());
    if (!cfg.system.deterministic)
      std::printf(
          "system.deterministic: false: zerotrain has no faster non-deterministic kernels, "
          "so the run is deterministic anyway\n");
    std::printf("# effective config (%s)\n%s", a.config_path.c_str(), config_yaml.c_str());
    std::printf("%s\n", engine->describe().c_str());
    std::printf(
        "model: %zu parameters (%zu padded for %d ranks), %s on %s, %d ranks, %d micro-steps "
        "of %d x %d per rank per step\n",
        table.total(), engine->padded_params(), world, dtype_name(ops.dtype()), ops.name().c_str(),
        world, accum, B, T);
    std::printf(
        "activations: %llu bytes per micro-batch measured, %llu by activation_bytes() "
        "(train.recompute: %s)\n",
        static_cast<unsigned long long>(model_activations),
        static_cast<unsigned long long>(activation_bytes(cfg.model, B, T, recompute, ops.dtype())),
        recompute_name(recompute));
    std::fflush(stdout);
  }

  // 4. Initial state: a checkpoint, an llm.c model file, or GPT-2 initialisation;
  // before anything is written, so that a checkpoint that does not verify or
  // does not fit this config leaves the run directory as it was.
  CheckpointContext ckpt;
  ckpt.run_dir = a.run_dir;
  ckpt.model = cfg.model;
  ckpt.keep = cfg.train.keep_checkpoints;
  ckpt.config_yaml = config_yaml;
  ckpt.config_json = config_to_json(cfg);
  ckpt.tokenizer = tokenizer_identity(cfg.data.tokenizer);
  ckpt.model_dtype = dtype_name(ops.dtype());
  ckpt.device = ops.name();
  int64_t start_step = 0;
  ResumePoint resumed;
  if (a.resume) {
    resumed = resume_from_checkpoint(
        a.run_dir, cfg.model, ckpt.tokenizer, *engine, [&](const std::string& why) {
          if (rank != 0) return;
          std::fprintf(stderr, "zerotrain: --resume: rejected %s\n", why.c_str());
          std::fflush(stderr);
        });
  }
  if (!resumed.dir.empty()) {
    start_step = resumed.meta.step;
    if (rank == 0) {
      std::printf("resumed from %s (step %lld, saved by %d ranks at stage %d", resumed.dir.c_str(),
                  static_cast<long long>(start_step), resumed.meta.world, resumed.meta.stage);
      if (resumed.rejected > 0)
        std::printf("; %d newer checkpoint%s rejected", resumed.rejected,
                    resumed.rejected == 1 ? "" : "s");
      std::printf(")\n");
      std::fflush(stdout);
    }
  } else {
    std::vector<float> w;
    if (!a.init_from.empty()) w = read_llmc_model(a.init_from, table);
    else {
      w.resize(table.total());
      init_gpt2_weights(table, cfg.train.seed, w.data());
    }
    engine->init_weights(w.data());
    if (rank == 0 && a.resume) {
      std::printf("--resume: no complete checkpoint in %s, starting fresh\n", a.run_dir.c_str());
      std::fflush(stdout);
    }
  }

  // 5. Outputs.
  if (rank == 0) {
    make_dirs(a.run_dir);
    out.write_config(config_yaml);
  }
  if (cfg.system.comm_trace) {
    char name[64];
    std::snprintf(name, sizeof name, "/comm_trace_rank%d.jsonl", rank);
    barrier_all();
    rt.comm->open_trace(a.run_dir + name);
  }
  out.open_metrics(start_step);

  std::signal(SIGTERM, on_stop_signal);
  std::signal(SIGINT, on_stop_signal);

  // 5. The loop.
  std::vector<int> in(static_cast<size_t>(B) * T), tgt(in.size());
  const double global_tokens = static_cast<double>(cfg.train.global_batch_tokens);
  std::vector<double> step_ms;
  std::vector<ComputeSample> compute_ms;
  double last_loss = 0, last_val = -1, timed_seconds = 0;
  int64_t timed_tokens = 0;
  const auto run_t0 = Clock::now();
  // Like llm.c, evaluate the untrained model too: the curve starts at step 0.
  double initial_val = -1;
  if (val_data && start_step == 0) {
    initial_val = evaluate(model, *engine, *val_data, cfg.train.eval_batches, B, T, world);
    if (rank == 0)
      std::printf("step     0/%d | val %.4f (before training)\n", cfg.train.steps, initial_val);
  }
  const CommStats comm_at_start = rt.comm->stats();  // training steps only
  int64_t step = start_step;
  for (; step < cfg.train.steps; step++) {
    if (sum_over_ranks(g_stop_signal != 0 ? 1.0 : 0.0) > 0) break;
    fault.maybe_fail(rank, step);
    rt.comm->set_step(step);
    const auto t0 = Clock::now();
    const double lr = learning_rate(cfg.train, static_cast<int>(step));
    double loss_sum = 0;
    const double exposed_at_start = rt.comm->stats().exposed_seconds;
    for (int micro = 0; micro < accum; micro++) {
      train_data.micro_batch(step, micro, in.data(), tgt.data());
      engine->begin_micro_step(micro, accum);
      loss_sum += model.forward_backward(in.data(), tgt.data(),
                                         static_cast<float>(1.0 / global_tokens), *engine);
      engine->end_micro_step();
    }
    ops.synchronize();
    const auto t_opt = Clock::now();
    const double exposed_at_opt = rt.comm->stats().exposed_seconds;
    OptimSettings os{static_cast<float>(lr), static_cast<float>(cfg.train.beta1),
                     static_cast<float>(cfg.train.beta2), static_cast<float>(cfg.train.eps),
                     static_cast<float>(cfg.train.weight_decay)};
    const double norm = engine->step(os, static_cast<int>(step) + 1);
    ops.synchronize();
    // Compute = wall time less the time blocked in the communicator's wait().
    const double exposed_now = rt.comm->stats().exposed_seconds;
    compute_ms.push_back(
        {(std::chrono::duration<double>(t_opt - t0).count() - (exposed_at_opt - exposed_at_start)) *
             1e3 / accum,
         (seconds_since(t_opt) - (exposed_now - exposed_at_opt)) * 1e3});
    last_loss = sum_over_ranks(loss_sum) / global_tokens;
    const double ms = seconds_since(t0) * 1e3;
    step_ms.push_back(ms);
    if (step > start_step || cfg.train.steps - start_step == 1) {
      timed_seconds += ms / 1e3;
      timed_tokens += cfg.train.global_batch_tokens;
    }

    StepRecord rec{step + 1, last_loss, lr, norm, ms, -1};
    const bool last = step + 1 == cfg.train.steps;
    if (val_data && ((step + 1) % cfg.train.eval_every == 0 || last)) {
      rec.val_loss = last_val =
          evaluate(model, *engine, *val_data, cfg.train.eval_batches, B, T, world);
    }
    const bool score = hellaswag_model && ((step + 1) % cfg.train.hellaswag_every == 0 || last);
    HellaswagResult h;
    if (score) {
      h = score_hellaswag(*hellaswag_model, *engine, hellaswag, rank, world, sum_over_ranks);
      rec.hellaswag_examples = h.examples;
      rec.hellaswag_correct = h.correct;
      rec.hellaswag_correct_norm = h.correct_norm;
    }
    out.step(rec, cfg.train.steps, global_tokens / (ms / 1e3), seconds_since(run_t0),
             static_cast<int>(step + 1 - start_step), cfg.train.log_every);
    if (score && rank == 0)
      std::printf("step %5lld | %s\n", static_cast<long long>(step + 1),
                  describe_hellaswag(h, cfg.train.hellaswag_file).c_str());
    if (sampler_model && ((step + 1) % cfg.train.sample_every == 0 || last)) {
      SampleSettings ss{cfg.train.sample_tokens, cfg.train.temperature, cfg.train.top_k,
                        cfg.train.seed + static_cast<uint64_t>(step), tokenizer->vocab_size()};
      std::vector<int> toks =
          sample_tokens(*sampler_model, *engine, sample_prompt(*tokenizer, ""), ss);
      if (rank == 0) out.sample(step + 1, sample_text(*tokenizer, toks));
    }
    if (cfg.train.checkpoint_every > 0 && ((step + 1) % cfg.train.checkpoint_every == 0 || last))
      save_checkpoint(ckpt, step + 1, *engine, rank, world);
  }

  // 6. Summary.
  const CommStats comm = with_job_mean_inter_node(rt.comm->stats().minus(comm_at_start), world);
  RunSummary s;
  s.world = world;
  s.steps_done = step;
  s.steps_this_run = step - start_step;
  s.final_train_loss = last_loss;
  s.final_val_loss = last_val;
  s.initial_val_loss = initial_val;
  s.tokens_per_second = timed_seconds > 0 ? timed_tokens / timed_seconds : 0;
  s.step_ms = step_ms;
  s.compute = compute_medians(compute_ms);
  s.micro_steps = accum;
  s.params = table.total();
  s.padded_params = engine->padded_params();
  s.config_json = ckpt.config_json;
  s.stage = engine->stage();
  s.grad_path = engine->grad_path_key();
  s.zero = cfg.zero;
  s.comm = comm;
  s.ledger = &ops.ledger();
  s.host_ledger = &ops.host_ledger();
  s.offload_grad_bytes_early = engine->optimizer().grad_copy_bytes().early;
  s.offload_grad_bytes_at_step = engine->optimizer().grad_copy_bytes().at_step;
  s.offload_param_read_ahead_bytes = engine->param_read_ahead_bytes();
  s.dtype_bytes = static_cast<int>(dtype_size(ops.dtype()));
  s.device = ops.name();
  s.persistent_bytes = engine->persistent_param_bytes();
  s.live_params_peak_bytes = engine->live_params_peak_bytes();
  s.recompute = recompute_name(recompute);
  s.activations_per_micro_batch = model_activations;
  s.activations_per_micro_batch_formula = activation_bytes(cfg.model, B, T, recompute, ops.dtype());
  s.nodes = rt.comm->nodes().nodes();
  s.ranks_per_node = rt.comm->nodes().ranks_per_node();
  s.cluster_text = cluster;
  out.summary(s);
  if (g_stop_signal != 0) {
    if (rank == 0)
      std::fprintf(stderr, "zerotrain: stopped by signal %d after step %lld\n",
                   static_cast<int>(g_stop_signal), static_cast<long long>(step));
    return 128 + static_cast<int>(g_stop_signal);
  }
  return 0;
}

}  // namespace zt
