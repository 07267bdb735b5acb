// Pipeline stages of the model on the CPU, in one process: the stage tables
// (model/param_table.h) hold the blocks split_blocks gives them, the
// embeddings on the first and the head with its own wte on the last; run one
// after another, handing the residual stream forward and its gradient back,
// P stages give the whole model's losses and every gradient (wte's as the
// first stage's plus the last's), with two micro-batches in flight; each
// stage emits the whole model's events restricted to its own modules; its
// activation ledger equals stage_activation_bytes(); a stage's table and
// messages equal the closed forms of zero/analysis/grid_volume.h.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "model/activation_memory.h"
#include "model/gpt.h"
#include "model/tensor_split.h"
#include "tests/support/catch.h"
#include "tests/support/flat_hooks.h"
#include "tests/support/test_support.h"
#include "train/loop/init_weights.h"
#include "zero/analysis/grid_volume.h"
#include "zero/analysis/pipeline_plan.h"
#include "zero/grid/pipeline_schedule.h"

namespace zt {
namespace {

GPTConfig pipeline_shape() { return gpt_shape(5, 2, 16, 37, 8); }

ParamTable stage_table(const GPTConfig& c, int stages, int index) {
  const StageBlocks b = split_blocks(c.n_layer, stages)[static_cast<size_t>(index)];
  return ParamTable(c, TensorSplit{}, PipelineSplit{stages, index, b.first, b.count});
}

std::vector<std::string> param_names(const ParamTable& t) {
  std::vector<std::string> names;
  for (const ParamInfo& p : t.params()) names.push_back(p.name);
  return names;
}

// The whole model's events restricted to what `stage` holds, named in it.
std::vector<ModuleEvent> restricted(const std::vector<ModuleEvent>& whole_events,
                                    const ParamTable& whole, const ParamTable& stage) {
  std::vector<ModuleEvent> out;
  for (ModuleEvent e : whole_events) {
    if (e.kind == ModuleEvent::GradReady) {
      const ParamInfo* p = stage.find(whole.params()[static_cast<size_t>(e.index)].name);
      if (!p) continue;
      e.index = static_cast<int>(p - stage.params().data());
    } else {
      e.index = stage.module_index(whole.modules()[static_cast<size_t>(e.index)].name);
      if (e.index < 0) continue;
    }
    out.push_back(e);
  }
  return out;
}

bool same_events(const std::vector<ModuleEvent>& a, const std::vector<ModuleEvent>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++)
    if (a[i].kind != b[i].kind || a[i].backward != b[i].backward || a[i].index != b[i].index)
      return false;
  return true;
}

}  // namespace

TEST_CASE("stage tables hold their blocks, the embeddings first, the head and wte last",
          "[pipeline_stages]") {
  const GPTConfig c = pipeline_shape();  // 5 blocks
  const ParamTable whole(c);
  const ParamTable s0 = stage_table(c, 3, 0), s1 = stage_table(c, 3, 1), s2 = stage_table(c, 3, 2);
  // split_blocks: 2, 2, 1.
  CHECK(s0.first_block() == 0);
  CHECK(s0.blocks() == 2);
  CHECK(s1.first_block() == 2);
  CHECK(s2.first_block() == 4);
  CHECK(s2.blocks() == 1);
  const std::vector<std::string> n0 = param_names(s0), n1 = param_names(s1), n2 = param_names(s2);
  CHECK(n0.front() == "wte.weight");
  CHECK(n0[1] == "wpe.weight");
  CHECK(n0.back() == "h.1.mlp.c_proj.bias");
  CHECK(n1.front() == "h.2.ln_1.weight");
  CHECK(n1.back() == "h.3.mlp.c_proj.bias");
  CHECK(n2.front() == "wte.weight");  // the head's copy
  CHECK(n2[1] == "h.4.ln_1.weight");
  CHECK(n2.back() == "ln_f.bias");
  CHECK(s0.module_index("lm_head") < 0);
  CHECK(s1.module_index("wte") < 0);
  CHECK(s1.module_index("ln_f") < 0);
  CHECK(s2.module_index("wte") < 0);
  CHECK(s2.modules()[static_cast<size_t>(s2.module_index("lm_head"))].params ==
        std::vector<int>{0});
  CHECK(s1.block_param(3, kFcW) == s1.find("h.3.mlp.c_fc.weight") - s1.params().data());
  // Every tensor is on exactly one stage but wte, on the first and the last.
  CHECK(s0.total() + s1.total() + s2.total() == whole.total() + whole.find("wte.weight")->numel);
  CHECK(n0.size() + n1.size() + n2.size() == whole.params().size() + 1);
  CHECK_THROWS_WITH(ParamTable(c, TensorSplit{}, PipelineSplit{2, 1, 4, 2}),
                    Catch::Contains("blocks 4..5 are not among the model's 5"));
  CHECK_THROWS_AS(ParamTable(c, TensorSplit{}, PipelineSplit{2, 2, 0, 1}), std::invalid_argument);
}

TEST_CASE("P stages in turn give the whole model's losses and gradients", "[pipeline_stages]") {
  const GPTConfig c = pipeline_shape();
  const ParamTable whole(c);
  std::mt19937_64 rng(test_seed());
  const int B = 2, T = c.seq_len, N = B * T, micro_batches = 2;
  std::vector<float> w(whole.total());
  init_gpt2_weights(whole, rng(), w.data());
  // Every weight perturbed, so that no zero bias hides a misplaced term.
  std::normal_distribution<float> noise(0.0f, 0.02f);
  for (float& x : w) x += noise(rng);
  std::vector<std::vector<int>> in(micro_batches, std::vector<int>(N)), tgt = in;
  for (int k = 0; k < micro_batches; k++)
    for (int i = 0; i < N; i++) {
      in[k][i] = static_cast<int>(rng() % c.vocab_size);
      tgt[k][i] = static_cast<int>(rng() % c.vocab_size);
    }
  const float dloss = 1.0f / (micro_batches * N);

  for (Recompute r : {Recompute::None, Recompute::Block, Recompute::Attn}) {
    auto ops = make_cpu_ops();
    FlatHooks whole_hooks(whole, *ops);
    whole_hooks.set_params(w);
    double whole_loss[micro_batches];
    {
      GPT model(whole, *ops, B, T, r);
      for (int k = 0; k < micro_batches; k++)
        whole_loss[k] = model.forward_backward(in[k].data(), tgt[k].data(), dloss, whole_hooks);
    }
    const std::vector<float> whole_grads = whole_hooks.grads_f32();
    const std::vector<ModuleEvent> whole_events = GPT::training_events(whole, r);

    for (int P : {2, 3, 5}) {
      INFO("recompute " << recompute_name(r) << ", " << P << " stages");
      std::vector<std::unique_ptr<ParamTable>> tables;
      std::vector<std::unique_ptr<FlatHooks>> hooks;
      std::vector<std::unique_ptr<GPT>> models;
      for (int s = 0; s < P; s++) {
        tables.emplace_back(new ParamTable(stage_table(c, P, s)));
        const ParamTable& t = *tables.back();
        hooks.emplace_back(new FlatHooks(t, *ops));
        hooks.back()->set_params(take_shard(whole, t, w.data()));
        const uint64_t before = ops->ledger().current(MemCategory::Activations);
        models.emplace_back(new GPT(t, *ops, B, T, r, micro_batches));
        CHECK(ops->ledger().current(MemCategory::Activations) - before ==
              stage_activation_bytes(c, B, T, r, ops->dtype(), 1, t.blocks(), s == 0, s == P - 1,
                                     micro_batches));
        CHECK(same_events(GPT::training_events(t, r), restricted(whole_events, whole, t)));
      }
      const size_t boundary = models[0]->boundary_elems() * sizeof(float);
      // GPipe's order: both forwards, then both backwards, each through every stage.
      for (int k = 0; k < micro_batches; k++)
        for (int s = 0; s < P; s++) {
          if (s > 0)
            std::memcpy(models[s]->stage_input(k), models[s - 1]->stage_output(k), boundary);
          models[s]->stage_forward(k, in[k].data(), tgt[k].data(), GPT::Head::TrainLoss, dloss,
                                   *hooks[s]);
        }
      for (int k = 0; k < micro_batches; k++) {
        CHECK(models[P - 1]->stage_loss_sum(k) == Approx(whole_loss[k]).epsilon(1e-6));
        for (int s = P - 1; s >= 0; s--) {
          if (s < P - 1)
            std::memcpy(models[s]->output_grad(), models[s + 1]->input_grad(k), boundary);
          models[s]->stage_backward(k, *hooks[s]);
        }
      }
      // Each stage's gradients are the whole model's; wte's are split between the ends.
      double worst = 0;
      std::vector<float> wte(whole.find("wte.weight")->numel, 0.0f);
      for (int s = 0; s < P; s++) {
        const std::vector<float> g = hooks[s]->grads_f32();
        for (const ParamInfo& p : tables[s]->params()) {
          const ParamInfo& wp = *whole.find(p.name);
          for (size_t i = 0; i < p.numel; i++) {
            if (p.name == "wte.weight") {
              wte[i] += g[p.offset + i];
              continue;
            }
            worst = std::max(worst, static_cast<double>(
                                        std::fabs(g[p.offset + i] - whole_grads[wp.offset + i])));
          }
        }
      }
      const size_t wte_at = whole.find("wte.weight")->offset;
      for (size_t i = 0; i < wte.size(); i++)
        worst = std::max(worst, static_cast<double>(std::fabs(wte[i] - whole_grads[wte_at + i])));
      CHECK(worst < 1e-6);
    }
  }
}

}  // namespace zt

namespace zt {

// The closed forms (zero/analysis/grid_volume.h, written from Megatron-LM's
// papers apart from the tables and the schedules) against what a stage holds
// and what `plan` lists for it.
TEST_CASE("stage tables and messages equal the grid's closed forms", "[pipeline_stages]") {
  const GPTConfig c = gpt_shape(5, 4, 32, 48, 8);
  for (int T : {1, 2, 4})
    for (int P = 1; P <= c.n_layer; P++)
      for (PipelineSchedule schedule : {PipelineSchedule::OneFOneB, PipelineSchedule::GPipe})
        for (int m : {1, 2, 7}) {
          GridShape g;
          g.tp = T;
          g.pp = P;
          g.micro_batches = m;
          g.micro_batch = 3;
          g.seq = c.seq_len;
          for (int s = 0; s < P; s++) {
            INFO("T " << T << ", stage " << s << " of " << P << ", " << m << " micro-batches, "
                      << pipeline_schedule_name(schedule));
            const ParamTable t(c, TensorSplit{T, 0}, stage_split(c.n_layer, P, s));
            CHECK(t.total() == stage_local_numel(g, c, s));
            const std::vector<PlannedCall> calls = plan_pipeline_calls(
                stage_actions(schedule, P, s, m), s, P, m, g.tokens() * c.n_embd,
                t.params().front().numel, DType::BF16, false);
            double sent = 0;
            for (const PlannedCall& call : calls)
              if (call.primitive == Primitive::Send) sent += call.count * dtype_size(call.dtype);
            // The gradient norm's one float over the pipeline, at P > 1.
            int norms = 0;
            for (const PlannedCall& call : calls)
              norms += call.primitive == Primitive::AllReduce && call.count == 1;
            CHECK(norms == (P > 1 ? 1 : 0));
            CHECK(sent == pipeline_volume(g, c, DType::BF16, s).bus_bytes());
          }
        }
}

}  // namespace zt
