#include "train/loop/run_setup.h"

#include <chrono>
#include <cstdint>
#include <cstdio>

#include "data/input/input_file.h"
#include "data/json_reader.h"
#include "data/shard.h"
#include "model/activation_memory.h"
#include "model/device_services.h"
#include "train/config/cluster_description.h"
#include "train/config/zero_setup.h"
#include "train/deepspeed/deepspeed_import.h"
#include "train/loop/data_fallback.h"
#include "zero/layout/mics_groups.h"

namespace zt {

RunSettings load_run_settings(const TrainArgs& a, int world) {
  RunSettings r;
  r.cfg = load_config(a.config_path, a.overrides);
  Config& cfg = r.cfg;
  if (!a.deepspeed.empty()) {
    const DeepSpeedRelease release = cfg.zero.deepspeed_version;  // before the import resets zero
    apply_deepspeed_config(a.deepspeed, cfg, r.ds_warnings, world, nullptr, release);
    validate_config(cfg);
  }
  validate_for_world(cfg, world);
  if (cfg.system.compute == "emulate") {
    if (const std::string note =
            switch_off_model_outputs(a.resume, !a.init_from.empty(), cfg.train);
        !note.empty())
      r.data_notes.push_back(note);
    r.emulated = emulated_durations(cfg);
  }
  r.data_notes = apply_data_fallbacks(cfg.data, cfg.train.eval_every > 0);
  r.fault = parse_fault_injection(cfg.system.fault_inject);
  r.cluster = read_cluster_description().json;
  r.config_yaml = config_to_yaml(cfg);
  r.accum = grad_accum_steps(cfg, world);
  r.B = cfg.train.micro_batch;
  r.T = cfg.model.seq_len;
  return r;
}

RunData load_run_data(const RunSettings& r, int rank, int world) {
  const Config& cfg = r.cfg;
  RunData d;
  d.train.reset(new DataLoader(cfg.data.train, cfg.model.vocab_size, r.B, r.T, rank, world, r.accum,
                               cfg.train.seed, true));
  if (cfg.train.eval_every > 0)
    d.val.reset(new DataLoader(cfg.data.val, cfg.model.vocab_size, r.B, r.T, rank, world, 1,
                               cfg.train.seed, false));
  if (cfg.train.sample_every > 0 || cfg.train.hellaswag_every > 0) {
    d.tokenizer = make_tokenizer(cfg.data.tokenizer);
    if (d.tokenizer->vocab_size() > cfg.model.vocab_size)
      throw ConfigError("data.tokenizer " + cfg.data.tokenizer + " has " +
                        std::to_string(d.tokenizer->vocab_size()) +
                        " tokens, more than model.vocab_size " +
                        std::to_string(cfg.model.vocab_size));
  }
  if (cfg.train.hellaswag_every > 0)
    d.hellaswag = tokenize_hellaswag(read_hellaswag(cfg.train.hellaswag_file), *d.tokenizer,
                                     cfg.model.vocab_size, cfg.train.hellaswag_file);
  return d;
}

RunModels::RunModels(const RunSettings& r, const RunData& d)
    : rt(make_runtime(r.cfg.system)), grid(parallel_grid(r.cfg, rt.comm->world())),
      table(r.cfg.model,
            TensorSplit{grid.tensor, grid.tensor_index(rt.comm->rank()),
                        r.cfg.parallel.sequence_parallel},
            stage_split(r.cfg.model.n_layer, grid.pipeline, grid.pipeline_index(rt.comm->rank()))) {
  const Config& cfg = r.cfg;
  Ops& ops = *rt.ops;
  check_offload_paths(cfg.zero);
  // Collective over the world, in this order on every rank.
  if (grid.tensor > 1)
    tensor_comm = rt.comm->counted_subgroup(grid.tensor_group(), Dimension::Tensor);
  if (grid.tensor > 1 || grid.pipeline > 1)
    data_comm = rt.comm->counted_subgroup(grid.data_group(), Dimension::Data);
  if (grid.pipeline > 1) {
    pipeline_comm = rt.comm->counted_subgroup(grid.pipeline_group(), Dimension::Pipeline);
    pipeline.reset(new PipelineStage(parse_pipeline_schedule(cfg.parallel.pipeline_schedule),
                                     r.accum, *pipeline_comm, ops));
  }
  Communicator& zc = zero_comm();
  const int ranks_per_node =
      data_comm ? data_comm->nodes().ranks_per_node() : rt.comm->nodes().ranks_per_node();
  ZeroSetup setup = zero_setup(cfg, table, ranks_per_node);
  // The gradient norm is the whole model's: summed over the tensor group and
  // the pipeline too.
  if (tensor_comm || pipeline_comm)
    setup.model_parallel = grid_parallel_norm(table, tensor_comm.get(), pipeline_comm.get());
  engine = make_zero_engine(setup, table, ops, zc);
  if (tensor_comm) tensor_hooks.reset(new TensorParallelHooks(*engine, table, ops, *tensor_comm));
  recompute = recompute_level(cfg);
  const int slots = pipeline ? pipeline->slots() : 1;
  if (r.emulated) {
    const EmulatedDurations& d = *r.emulated;
    // A pipeline stage or a tensor shard waits its share of the whole model's
    // micro-step, by parameter elements (the last stage's wte copy standing
    // for the head); a shard also makes the real shard's combines.
    const size_t whole = ParamTable(cfg.model).total();
    const double share = static_cast<double>(table.total()) / static_cast<double>(whole);
    emulated.reset(new EmulatedGPT(
        table, recompute,
        std::chrono::nanoseconds(static_cast<int64_t>(d.micro_step_ms * share * 1e6)),
        d.forward_fraction, &ops, static_cast<size_t>(r.B) * static_cast<size_t>(r.T)));
    if (pipeline) stage = emulated_stage(table, *emulated, ops, r.B, r.T, slots);
    size_t updated = 0;
    for (const OptimPiece& p : engine->optimizer().pieces()) updated += p.n;
    engine->optimizer().wait_instead_of_update(optimizer_wait_ms(d, updated, whole));
    return;
  }
  // The training model's activations, measured: it allocates them all here,
  // and its passes allocate nothing more (tests/unit/test_recompute.cpp).
  const uint64_t activations_before = ops.ledger().current(MemCategory::Activations);
  model.reset(new GPT(table, ops, r.B, r.T, recompute, slots));
  if (pipeline) stage = real_stage(*model);
  model_activations = ops.ledger().current(MemCategory::Activations) - activations_before;
  activations_formula = stage_activation_bytes(cfg.model, r.B, r.T, recompute, ops.dtype(),
                                               grid.tensor, table.blocks(), table.has_embeddings(),
                                               table.has_head(), slots, table.sequence_split());
  // Forward-only models keep nothing for a backward: block's layout is the smallest.
  if (cfg.train.sample_every > 0) sampler.reset(new GPT(table, ops, 1, r.T, Recompute::Block));
  if (cfg.train.hellaswag_every > 0)
    hellaswag.reset(
        new GPT(table, ops, r.B,
                hellaswag_positions(d.hellaswag, r.T, table.sequence_split() ? grid.tensor : 1),
                Recompute::Block));
}

void print_run_header(const TrainArgs& a, const RunSettings& r, const RunModels& m, int world) {
  const Config& cfg = r.cfg;
  Ops& ops = *m.rt.ops;
  for (const auto& w : r.ds_warnings) std::printf("deepspeed: %s\n", w.c_str());
  for (const auto& note : r.data_notes) std::printf("%s\n", note.c_str());
  if (!m.rt.device_note.empty()) std::printf("%s\n", m.rt.device_note.c_str());
  if (!cfg.system.deterministic)
    std::printf(
        "system.deterministic: false: zerotrain has no faster non-deterministic kernels, "
        "so the run is deterministic anyway\n");
  std::printf("# effective config (%s)\n%s", a.config_path.c_str(), r.config_yaml.c_str());
  std::printf("%s\n", m.engine->describe().c_str());
  if (r.emulated)
    std::printf(
        "compute: EMULATED (system.compute: emulate): the model's arithmetic is replaced by "
        "waits of %.6g ms per micro-step (forward %.3g of it) and %.6g ms per optimizer step for "
        "the whole model (x %.6g time scale applied), from %s; collectives, buckets and schedule "
        "are real; no loss is computed\n",
        r.emulated->micro_step_ms, r.emulated->forward_fraction, r.emulated->optimizer_ms,
        r.emulated->time_scale, r.emulated->source.c_str());
  if (m.grid.tensor > 1 || m.grid.pipeline > 1)
    std::printf(
        "grid: %d data-parallel x %d tensor-parallel x %d pipeline ranks (%s); rank 0's part "
        "holds %zu of the model's %zu parameters, and ZeRO runs over the data-parallel group\n",
        m.grid.data, m.grid.tensor, m.grid.pipeline, cfg.parallel.rank_order.c_str(),
        m.table.total(), ParamTable(cfg.model).total());
  if (m.pipeline) {
    const int P = m.grid.pipeline, mb = r.accum;
    std::printf(
        "pipeline: %d stages, schedule %s, %d micro-batches per step; bubble (P-1)/(m+P-1) = "
        "%.4f by formula; stage 0 holds blocks 0..%d and %d micro-batches' activations\n",
        P, cfg.parallel.pipeline_schedule.c_str(), mb, static_cast<double>(P - 1) / (mb + P - 1),
        m.table.blocks() - 1, m.pipeline->slots());
  }
  std::printf(
      "model: %zu parameters (%zu padded for %d ranks), %s on %s, %d ranks, %d micro-steps "
      "of %d x %d per rank per step\n",
      m.table.total(), m.engine->padded_params(), shard_ranks(cfg.zero, m.grid.data),
      dtype_name(ops.dtype()), ops.name().c_str(), world, r.accum, r.B, r.T);
  std::printf(
      "host: %d ranks share this machine's %d cores: %d BLAS threads per rank, MPI waits %s\n",
      m.rt.ranks_on_machine, m.rt.cores, m.rt.cpu_threads,
      m.rt.waits_sleep ? "sleep between tests" : "spin");
  if (!r.emulated)
    std::printf("activations: %llu bytes %s measured, %llu by %s (train.recompute: %s)\n",
                static_cast<unsigned long long>(m.model_activations),
                m.pipeline ? "on stage 0 (its slots)" : "per micro-batch",
                static_cast<unsigned long long>(m.activations_formula),
                m.pipeline ? "stage_activation_bytes()" : "activation_bytes()",
                recompute_name(m.recompute));
  std::fflush(stdout);
}

CheckpointContext checkpoint_context(const TrainArgs& a, const RunSettings& r, const RunModels& m) {
  const Ops& ops = *m.rt.ops;
  CheckpointContext ckpt;
  ckpt.run_dir = a.run_dir;
  ckpt.model = r.cfg.model;
  ckpt.keep = r.cfg.train.keep_checkpoints;
  ckpt.config_yaml = r.config_yaml;
  ckpt.config_json = config_to_json(r.cfg);
  ckpt.tokenizer = tokenizer_identity(r.cfg.data.tokenizer);
  ckpt.model_dtype = dtype_name(ops.dtype());
  ckpt.device = ops.name();
  ckpt.part = whole_runs(ParamTable(r.cfg.model), m.table);
  return ckpt;
}

}  // namespace zt
