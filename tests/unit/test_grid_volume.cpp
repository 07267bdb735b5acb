// The grid's closed forms (zero/analysis/grid_volume.h, grid_memory.h) and
// DeepSpeed's pipeline-engine rule (zero/schedule/deepspeed_behaviours.h),
// every expected value worked out by hand in the comment beside it.
#include <stdexcept>

#include "model/param_table.h"
#include "tests/support/catch.h"
#include "zero/analysis/grid_memory.h"
#include "zero/analysis/grid_volume.h"
#include "zero/schedule/deepspeed_behaviours.h"

namespace zt {
namespace {

// GPT-2 124M with llm.c's padded vocabulary: L 12, a 12, C 768, V 50304, 1024 positions.
GPTConfig gpt2_124m() {
  GPTConfig c;
  c.n_layer = 12;
  c.n_head = 12;
  c.n_embd = 768;
  c.vocab_size = 50304;
  c.seq_len = 1024;
  return c;
}

GPTConfig small_model() {
  GPTConfig c;
  c.n_layer = 4;
  c.n_head = 4;
  c.n_embd = 64;
  c.vocab_size = 256;
  c.seq_len = 64;
  return c;
}

GridShape grid(int dp, int tp, int pp, int m, int B, int S, bool sp = false) {
  GridShape g;
  g.dp = dp;
  g.tp = tp;
  g.pp = pp;
  g.micro_batches = m;
  g.micro_batch = B;
  g.seq = S;
  g.sequence_parallel = sp;
  return g;
}

uint64_t calls_of(const GridVolume& v, GridCall k) {
  uint64_t n = 0;
  for (const VolumeTerm& t : v.terms)
    if (t.call == k) n += t.calls;
  return n;
}

DeepSpeedRelease release(int major, int minor, int patch) { return {major, minor, patch}; }

}  // namespace

TEST_CASE("grid: stages take contiguous blocks, the first L mod P one more", "[grid]") {
  // L 12, P 4: 3 each, starting at 0, 3, 6, 9.
  for (int s = 0; s < 4; s++) {
    CHECK(stage_blocks(12, 4, s).count == 3);
    CHECK(stage_blocks(12, 4, s).first == 3 * s);
  }
  // L 10, P 4: 10 = 4 x 2 + 2, so 3, 3, 2, 2 starting at 0, 3, 6, 8.
  const int count[] = {3, 3, 2, 2}, first[] = {0, 3, 6, 8};
  for (int s = 0; s < 4; s++) {
    CHECK(stage_blocks(10, 4, s).count == count[s]);
    CHECK(stage_blocks(10, 4, s).first == first[s]);
  }
  CHECK_THROWS_AS(stage_blocks(4, 5, 0), std::invalid_argument);
  CHECK_THROWS_AS(stage_blocks(12, 4, 4), std::invalid_argument);
}

TEST_CASE("grid: a bad grid is one line naming the key", "[grid]") {
  const GPTConfig c = gpt2_124m();
  auto message = [&](const GridShape& g) {
    try {
      check_grid(g, c);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // 5 does not divide 12 heads.
  CHECK(message(grid(1, 5, 1, 1, 1, 64)).find("parallel.tensor: 5") == 0);
  // T 2 divides the 12 heads but not GPT-2's unpadded vocabulary, 50257 (odd).
  GPTConfig odd = c;
  odd.vocab_size = 50257;
  CHECK_THROWS_WITH(check_grid(grid(1, 2, 1, 1, 1, 64), odd),
                    Catch::Contains("parallel.tensor: 2") && Catch::Contains("vocabulary 50257"));
  CHECK(message(grid(1, 1, 13, 1, 1, 64)).find("parallel.pipeline: 13") == 0);
  CHECK(message(grid(1, 4, 1, 1, 1, 66, true)).find("parallel.sequence_parallel") == 0);
  CHECK(message(grid(2, 4, 4, 8, 1, 64, true)).empty());
}

TEST_CASE("grid: local parameters under Megatron's split", "[grid]") {
  const GPTConfig c = gpt2_124m();
  // T 1, per block 12C² + 13C = 12 x 589824 + 13 x 768 = 7077888 + 9984 = 7087872.
  CHECK(block_local_numel(c, 1) == 7087872);
  // T 2: 12C²/2 + 7C/2 + 6C = 3538944 + 2688 + 4608 = 3546240.
  CHECK(block_local_numel(c, 2) == 3546240);
  // T 1, P 1: 12 x 7087872 + wte 50304 x 768 + wpe 1024 x 768 + ln_f 1536
  //   = 85054464 + 38633472 + 786432 + 1536 = 124475904 (llm.c's GPT-2 124M).
  CHECK(stage_local_numel(grid(1, 1, 1, 1, 1, 1024), c, 0) == 124475904);
  CHECK(stage_local_numel(grid(1, 1, 1, 1, 1, 1024), c, 0) == ParamTable(c).total());
  // T 2, P 2, six blocks a stage: 6 x 3546240 = 21277440; wte/2 = 25152 x 768 = 19316736.
  //   stage 0: 21277440 + 19316736 + wpe 786432 = 41380608
  //   stage 1: 21277440 + ln_f 1536 + its own wte/2 19316736 = 40595712
  CHECK(stage_local_numel(grid(1, 2, 2, 1, 1, 1024), c, 0) == 41380608);
  CHECK(stage_local_numel(grid(1, 2, 2, 1, 1, 1024), c, 1) == 40595712);
  // T 4, P 4, three blocks a stage: block 12C²/4 + 7C/4 + 6C = 1769472 + 1344 + 4608 = 1775424;
  // wte/4 = 12576 x 768 = 9658368. Middle stage: 3 x 1775424 = 5326272.
  CHECK(stage_local_numel(grid(1, 4, 4, 1, 1, 1024), c, 1) == 5326272);
  CHECK(stage_local_numel(grid(1, 4, 4, 1, 1, 1024), c, 2) == 5326272);
  // Last: 5326272 + 1536 + 9658368 = 14986176.
  CHECK(stage_local_numel(grid(1, 4, 4, 1, 1, 1024), c, 3) == 14986176);
}

TEST_CASE("grid: tensor-parallel calls per step, no sequence parallelism", "[grid]") {
  const GPTConfig c = gpt2_124m();
  // T 2, P 1, m 2, B 4, S 1024: N = 4096, N·C = 3145728 elements, bf16: 6291456 bytes a call.
  const GridShape g = grid(1, 2, 1, 2, 4, 1024);
  const GridVolume v = tensor_volume(g, c, DType::BF16, Recompute::None, 0);
  // Per micro-batch: forward 1 + 2 x 12 = 25, backward 1 + 24 = 25; two micro-batches: 100.
  // + the cross-entropy's target logit (2) and the step's gradient-norm sum (1)
  CHECK(calls_of(v, GridCall::AllReduce) == 100 + 2 + 1);
  CHECK(calls_of(v, GridCall::AllGather) == 2);
  // Payload: 100 x 6291456 = 629145600; the log-sum-exp all-gather's output 4096 x 4 x 2 =
  // 32768 a call, 65536; the target-logit all-reduce 4096 x 4 = 16384 a call, 32768; the
  // norm's one fp32, 4.
  CHECK(v.payload_bytes() == 629145600.0 + 65536 + 32768 + 4);
  // Bus at T 2: all-reduce x 2(1)/2 = 1, all-gather x 1/2: 629145600 + 32768 + 4 + 32768.
  CHECK(v.bus_bytes(GridCall::AllReduce) == 629145600.0 + 32768 + 4);
  CHECK(v.bus_bytes(GridCall::AllGather) == 32768.0);
  CHECK(v.bus_bytes() == 629211140.0);
  CHECK(v.calls() == 105);

  // Recompute `block`: + one attention-projection all-reduce per block and micro-batch,
  // 12 x 2 = 24 calls, 24 x 6291456 = 150994944 bytes.
  const GridVolume block = tensor_volume(g, c, DType::BF16, Recompute::Block, 0);
  CHECK(block.calls() == 129);
  CHECK(block.bus_bytes() == 629211140.0 + 150994944);
  CHECK(tensor_volume(g, c, DType::BF16, Recompute::Attn, 0).calls() == 105);
  CHECK(tensor_volume(g, c, DType::BF16, Recompute::Mlp, 0).calls() == 105);

  // T 1: nothing.
  CHECK(tensor_volume(grid(2, 1, 1, 2, 4, 1024), c, DType::BF16, Recompute::None, 0).calls() == 0);
}

TEST_CASE("grid: tensor-parallel calls per pipeline stage", "[grid]") {
  const GPTConfig c = small_model();
  // T 4, P 2 (two blocks a stage), m 3, B 2, S 32: N = 64, N·C = 4096, fp32: 16384 bytes.
  const GridShape g = grid(1, 4, 2, 3, 2, 32);
  // Stage 0: forward 1 + 2 x 2 = 5, backward 2 x 2 = 4, 9 a micro-batch, 27 a step;
  // payload 27 x 16384 = 442368, bus x 2(3)/4 = 1.5: 663552. Every stage adds the
  // step's gradient-norm sum: 1 call of 4 bytes, bus 6.
  const GridVolume first = tensor_volume(g, c, DType::F32, Recompute::None, 0);
  CHECK(first.calls() == 27 + 1);
  CHECK(first.payload_bytes() == 442368.0 + 4);
  CHECK(first.bus_bytes() == 663552.0 + 6);
  // Stage 1: forward 4, backward 1 + 4, 27 all-reduces again (663552 bus); the
  // cross-entropy: all-gather 3 x (64 x 4 bytes x 4 ranks) = 3072, bus x 3/4 = 2304;
  // all-reduce 3 x 256 = 768, bus x 1.5 = 1152.
  const GridVolume last = tensor_volume(g, c, DType::F32, Recompute::None, 1);
  CHECK(last.calls() == 33 + 1);
  CHECK(last.bus_bytes(GridCall::AllGather) == 2304.0);
  CHECK(last.bus_bytes() == 663552.0 + 2304 + 1152 + 6);
}

TEST_CASE("grid: sequence parallelism splits each all-reduce, same bus bytes", "[grid]") {
  const GPTConfig c = gpt2_124m();
  const GridShape g = grid(1, 2, 1, 2, 4, 1024, true);
  const GridVolume v = tensor_volume(g, c, DType::BF16, Recompute::None, 0);
  // The 100 all-reduces of N·C become 100 all-gathers (each rank's 1572864 elements,
  // output 6291456 bytes, bus x 1/2 = 3145728) and 100 reduce-scatters (input
  // 6291456 bytes, bus 3145728): 100 x 6291456 = 629145600 bus, as before.
  // Each block's two kept LayerNorm outputs, and ln_f's, are gathered again
  // in the backward for the weight gradients after them: 2 x 24 + 2 = 50
  // all-gathers more, bus 50 x 3145728 = 157286400, payload 50 x 6291456 =
  // 314572800.
  CHECK(calls_of(v, GridCall::ReduceScatter) == 100);
  CHECK(calls_of(v, GridCall::AllGather) == 100 + 2 + 50);  // + the log-sum-exp all-gathers
  CHECK(v.bus_bytes(GridCall::ReduceScatter) == 314572800.0);
  CHECK(v.bus_bytes(GridCall::AllGather) == 314572800.0 + 32768 + 157286400);
  // Plus each micro-batch's LayerNorm gradients: 2 LayerNorms a block and ln_f,
  // 25 x 2 = 50 all-reduces of 2C = 1536 bf16 elements, 3072 bytes: 153600, bus x 1.
  // All-reduces: the target logit's 32768 + 153600, and the gradient norm's 4.
  CHECK(calls_of(v, GridCall::AllReduce) == 2 + 50 + 1);
  CHECK(v.bus_bytes(GridCall::AllReduce) == 32768.0 + 153600 + 4);
  CHECK(v.bus_bytes() == 629145600.0 + 157286400 + 65536 + 153600 + 4);
  // Payload doubles: 200 x 6291456 = 1258291200, + 65536 + 32768 + 153600 + 4.
  CHECK(v.payload_bytes() == 1258291200.0 + 314572800 + 65536 + 32768 + 153600 + 4);
  // Recompute `block` adds 2 all-gathers and 1 reduce-scatter a block and micro-batch:
  // 48 and 24.
  const GridVolume block = tensor_volume(g, c, DType::BF16, Recompute::Block, 0);
  CHECK(calls_of(block, GridCall::AllGather) == 152 + 48);
  CHECK(calls_of(block, GridCall::ReduceScatter) == 124);
  // `attn` gathers ln_1's output again: 1 a block and micro-batch, 24 all-gathers,
  // no reduce-scatter; `mlp` gathers ln_2's: the same.
  const GridVolume attn = tensor_volume(g, c, DType::BF16, Recompute::Attn, 0);
  CHECK(calls_of(attn, GridCall::AllGather) == 152 + 24);
  CHECK(calls_of(attn, GridCall::ReduceScatter) == 100);
  const GridVolume mlp = tensor_volume(g, c, DType::BF16, Recompute::Mlp, 0);
  CHECK(calls_of(mlp, GridCall::AllGather) == 152 + 24);
  CHECK(calls_of(mlp, GridCall::ReduceScatter) == 100);
}

TEST_CASE("grid: pipeline messages and the tied embedding per stage", "[grid]") {
  const GPTConfig c = gpt2_124m();
  // T 2, P 4, m 8, N 4096: a message is N·C = 3145728 bf16 elements, 6291456 bytes.
  const GridShape g = grid(1, 2, 4, 8, 4, 1024);
  // Tied gradient: V/T·C = 25152 x 768 = 19316736 elements, 38633472 bytes, over 2
  // ranks: bus x 2(1)/2 = 1.
  // Stage 0: 8 activations 50331648 + 38633472 = 88965120; 9 calls.
  const GridVolume first = pipeline_volume(g, c, DType::BF16, 0);
  CHECK(first.calls() == 9);
  CHECK(first.bus_bytes(GridCall::Send) == 50331648.0);
  CHECK(first.bus_bytes() == 88965120.0);
  // Middle stages: 8 activations and 8 gradients, 16 x 6291456 = 100663296.
  for (int s : {1, 2}) {
    const GridVolume middle = pipeline_volume(g, c, DType::BF16, s);
    CHECK(middle.calls() == 16);
    CHECK(middle.bus_bytes() == 100663296.0);
    CHECK(calls_of(middle, GridCall::AllReduce) == 0);
  }
  // Last: 8 gradients + the tied all-reduce, 88965120 again.
  CHECK(pipeline_volume(g, c, DType::BF16, 3).bus_bytes() == 88965120.0);
  // Sequence parallel: messages of N·C/T = 1572864 elements, 3145728 bytes: 16 of them.
  CHECK(pipeline_volume(grid(1, 2, 4, 8, 4, 1024, true), c, DType::BF16, 1).bus_bytes() ==
        50331648.0);
  // P 1: nothing.
  CHECK(pipeline_volume(grid(4, 2, 1, 8, 4, 1024), c, DType::BF16, 0).calls() == 0);
}

TEST_CASE("grid: ZeRO over the data-parallel group with the local parameters", "[grid]") {
  const GPTConfig c = gpt2_124m();
  // T 2, P 2, m 4, bf16: stage 0's Ψ 41380608, 82761216 bytes; stage 1's 40595712, 81191424.
  const GridShape g = grid(4, 2, 2, 4, 4, 1024);
  CHECK(data_volume(0, g, c, DType::BF16, 0).total() == 165522432.0);  // 2Ψ
  CHECK(data_volume(1, g, c, DType::BF16, 0).total() == 165522432.0);  // Ψ + Ψ
  CHECK(data_volume(2, g, c, DType::BF16, 0).total() == 413806080.0);  // 4Ψ + Ψ
  CHECK(data_volume(3, g, c, DType::BF16, 0).total() == 993134592.0);  // 4 x 3Ψ
  CHECK(data_volume(3, g, c, DType::BF16, 1).total() == 974297088.0);  // 12 x 81191424
}

TEST_CASE("grid: interference formulas", "[grid]") {
  // ZeRO-3: each micro-batch's forward and backward gather: 2 x 8 x 1000.
  CHECK(stage3_gathered_elements(1000, 8) == 16000);
  CHECK(stage3_gathered_elements(1000, 1) == 2000);
  // Gradient reductions per step at m 8: once for stages 0 and 1, every micro-step after.
  CHECK(gradient_reductions_per_step(0, 8) == 1);
  CHECK(gradient_reductions_per_step(1, 8) == 1);
  CHECK(gradient_reductions_per_step(2, 8) == 8);
  CHECK(gradient_reductions_per_step(3, 8) == 8);
  CHECK_THROWS_AS(gradient_reductions_per_step(4, 8), std::invalid_argument);
}

TEST_CASE("grid: rank order places the tensor group inside or across nodes", "[grid]") {
  // D 4, T 2, P 1, W 8, G 4. Tensor innermost: groups {0,1} {2,3} {4,5} {6,7}, inside
  // nodes {0-3} {4-7}: nothing crosses. Data innermost: {0,4} {1,5} ...: every ring
  // edge crosses, all of it.
  const GridShape g = grid(4, 2, 1, 1, 1, 1);
  CHECK(tensor_group(g, RankOrder::TensorInnermost) == RankGroup{2, 1});
  CHECK(tensor_group(g, RankOrder::DataInnermost) == RankGroup{2, 4});
  CHECK(data_group(g, RankOrder::TensorInnermost) == RankGroup{4, 2});
  CHECK(data_group(g, RankOrder::DataInnermost) == RankGroup{4, 1});
  CHECK(inter_node_tensor_bytes(1000, g, 4, RankOrder::TensorInnermost) == 0.0);
  CHECK(inter_node_tensor_bytes(1000, g, 4, RankOrder::DataInnermost) == 1000.0);
  // D 2, T 4, G 2, W 8. Tensor innermost {0,1,2,3}: nodes 0 0 1 1, ring edges 1->2 and
  // 3->0 cross, 2 of 4 ranks: half. Data innermost {0,2,4,6}: nodes 0 1 2 3, all cross.
  const GridShape wide = grid(2, 4, 1, 1, 1, 1);
  CHECK(inter_node_tensor_bytes(1000, wide, 2, RankOrder::TensorInnermost) == 500.0);
  CHECK(inter_node_tensor_bytes(1000, wide, 2, RankOrder::DataInnermost) == 1000.0);
  // Pipeline outermost: D 2, T 2, P 2: stride 4.
  CHECK(pipeline_group(grid(2, 2, 2, 1, 1, 1), RankOrder::TensorInnermost) == RankGroup{2, 4});
}

TEST_CASE("grid: the bubble is (P-1)/(m+P-1)", "[grid]") {
  CHECK(bubble_fraction(4, 8) == Approx(3.0 / 11));
  CHECK(bubble_fraction(2, 2) == Approx(1.0 / 3));
  CHECK(bubble_fraction(1, 8) == 0.0);
}

TEST_CASE("grid: model states per rank over the grid", "[grid]") {
  const GPTConfig c = gpt2_124m();
  // Stage 0 of T 2, P 2: Ψ 41380608, D 4, 2 + 2 + 12 bytes a parameter.
  const GridShape g = grid(4, 2, 2, 1, 1, 1024);
  CHECK(grid_model_states_bytes(0, g, c, 0) == 662089728);  // 16Ψ
  CHECK(grid_model_states_bytes(1, g, c, 0) == 289664256);  // 4Ψ + 12Ψ/4 = 7Ψ
  CHECK(grid_model_states_bytes(2, g, c, 0) == 227593344);  // 2Ψ + 14Ψ/4 = 82761216 + 144832128
  CHECK(grid_model_states_bytes(3, g, c, 0) == 165522432);  // 16Ψ/4 = 4Ψ
}

TEST_CASE("grid: activations per Korthikanti et al. Table 2", "[grid]") {
  const GPTConfig c = gpt2_124m();
  // s 1024, b 4, h 768, a 12: sbh = 3145728, 5as/h = 5 x 12 x 1024 / 768 = 80.
  // No TP: 3145728 x (34 + 80) = 358612992.
  CHECK(block_activation_bytes(grid(1, 1, 1, 1, 4, 1024), c) == 358612992.0);
  // T 2: 10 + 24/2 + 80/2 = 62 -> 195035136; T 4: 10 + 6 + 20 = 36 -> 113246208.
  CHECK(block_activation_bytes(grid(1, 2, 1, 1, 4, 1024), c) == 195035136.0);
  CHECK(block_activation_bytes(grid(1, 4, 1, 1, 4, 1024), c) == 113246208.0);
  // T 2 + SP: 34/2 + 40 = 57 -> 179306496; T 4 + SP: 8.5 + 20 = 28.5 -> 89653248.
  CHECK(block_activation_bytes(grid(1, 2, 1, 1, 4, 1024, true), c) == 179306496.0);
  CHECK(block_activation_bytes(grid(1, 4, 1, 1, 4, 1024, true), c) == 89653248.0);

  // T 2, P 4 (3 blocks a stage), m 8. 1F1B: stage 0 holds min(4, 8) = 4 micro-batches:
  // 3 x 4 x 195035136 = 2340421632; stage 3 holds 1: 585105408. GPipe: 8 everywhere,
  // 3 x 8 x 195035136 = 4680843264.
  const GridShape g = grid(1, 2, 4, 8, 4, 1024);
  CHECK(micro_batches_in_flight(PipelineSchedule::OneFOneB, g, 0) == 4);
  CHECK(micro_batches_in_flight(PipelineSchedule::OneFOneB, g, 2) == 2);
  CHECK(stage_activation_bytes(PipelineSchedule::OneFOneB, g, c, 0) == 2340421632.0);
  CHECK(stage_activation_bytes(PipelineSchedule::OneFOneB, g, c, 3) == 585105408.0);
  CHECK(stage_activation_bytes(PipelineSchedule::GPipe, g, c, 3) == 4680843264.0);
  // m 2 < P: 1F1B's stage 0 holds min(4, 2) = 2.
  CHECK(micro_batches_in_flight(PipelineSchedule::OneFOneB, grid(1, 2, 4, 2, 4, 1024), 0) == 2);
}

TEST_CASE("grid: DeepSpeed's pipeline engine refuses ZeRO 2 and 3 from 0.3.16", "[grid]") {
  // 0.3.15: the engine exists, no check; 0.3.16 asserts stage < 2.
  for (int stage = 0; stage <= 3; stage++)
    CHECK(pipeline_engine_accepts_zero_stage(release(0, 3, 15), stage));
  CHECK(pipeline_engine_accepts_zero_stage(release(0, 3, 16), 0));
  CHECK(pipeline_engine_accepts_zero_stage(release(0, 3, 16), 1));
  CHECK_FALSE(pipeline_engine_accepts_zero_stage(release(0, 3, 16), 2));
  CHECK_FALSE(pipeline_engine_accepts_zero_stage(release(0, 3, 16), 3));
  // 0.10.0 / 0.10.1: the spelling changes to the enum, the rule does not.
  CHECK_FALSE(pipeline_engine_accepts_zero_stage(release(0, 10, 0), 2));
  CHECK_FALSE(pipeline_engine_accepts_zero_stage(release(0, 10, 1), 2));
  CHECK(pipeline_engine_accepts_zero_stage(release(0, 10, 1), 1));
  // The newest release zerotrain emulates.
  CHECK(pipeline_engine_accepts_zero_stage(release(0, 19, 8), 1));
  CHECK_FALSE(pipeline_engine_accepts_zero_stage(release(0, 19, 8), 3));
  // No pipeline engine before 0.3.0; nothing known after 0.19.8; stages 0-3 only.
  CHECK_THROWS_AS(pipeline_engine_accepts_zero_stage(release(0, 2, 0), 0), std::invalid_argument);
  CHECK_THROWS_AS(pipeline_engine_accepts_zero_stage(release(0, 19, 9), 0), std::invalid_argument);
  CHECK_THROWS_AS(pipeline_engine_accepts_zero_stage(release(0, 10, 3), 4), std::invalid_argument);
}

}  // namespace zt
