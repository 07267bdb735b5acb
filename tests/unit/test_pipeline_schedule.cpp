// The pipeline's schedules, block split and simulator against lists, timelines
// and formulas worked out by hand (docs/pipeline.md).
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/catch.h"
#include "zero/grid/pipeline_schedule.h"
#include "zero/grid/pipeline_simulator.h"

using namespace zt;
using Catch::Matchers::WithinRel;

namespace {

using List = std::vector<PipeAction>;
constexpr PipeOp RA = PipeOp::RecvActivation, F = PipeOp::Forward, SA = PipeOp::SendActivation,
                 RG = PipeOp::RecvGradient, B = PipeOp::Backward, SG = PipeOp::SendGradient;

std::string show(const List& list) {
  std::string out;
  for (const PipeAction& a : list) out += (out.empty() ? "" : ", ") + describe(a);
  return out;
}

void check_list(const List& got, const List& expected) {
  INFO("got:      " << show(got));
  INFO("expected: " << show(expected));
  CHECK(got == expected);
}

// "F0 SA0 RG0 B0": RA/F/SA/RG/B/SG and the micro-batch, blank-separated.
List parse_list(const std::string& text) {
  List out;
  std::istringstream in(text);
  for (std::string word; in >> word;) {
    const size_t digits = word.find_first_of("0123456789");
    const std::string op = word.substr(0, digits);
    const int k = std::stoi(word.substr(digits));
    if (op == "RA") out.push_back({RA, k});
    else if (op == "F") out.push_back({F, k});
    else if (op == "SA") out.push_back({SA, k});
    else if (op == "RG") out.push_back({RG, k});
    else if (op == "B") out.push_back({B, k});
    else if (op == "SG") out.push_back({SG, k});
    else FAIL("parse_list: unknown action '" << word << "'");
  }
  return out;
}

int count(const List& list, PipeOp op, int k) {
  return static_cast<int>(std::count(list.begin(), list.end(), PipeAction{op, k}));
}

PipelineTimes times(double forward, double backward, double message = 0) {
  PipelineTimes t;
  t.forward_s = forward;
  t.backward_s = backward;
  t.message_s = message;
  return t;
}

const PipelineSchedule kBoth[] = {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB};

// (P, m): one stage; m < P, m = P, m > P; m = 1.
const std::pair<int, int> kShapes[] = {{1, 1}, {1, 4}, {2, 1}, {2, 2}, {2, 3}, {3, 2},
                                       {3, 7}, {4, 2}, {4, 4}, {4, 8}, {5, 3}, {6, 13}};

}  // namespace

TEST_CASE("pipeline schedule names parse both ways; anything else is one line", "[pipeline]") {
  CHECK(std::string(pipeline_schedule_name(PipelineSchedule::GPipe)) == "gpipe");
  CHECK(std::string(pipeline_schedule_name(PipelineSchedule::OneFOneB)) == "1f1b");
  CHECK(parse_pipeline_schedule("gpipe") == PipelineSchedule::GPipe);
  CHECK(parse_pipeline_schedule("1f1b") == PipelineSchedule::OneFOneB);
  CHECK_THROWS_WITH(parse_pipeline_schedule("GPipe"),
                    "pipeline schedule: expected one of gpipe, 1f1b, got 'GPipe'");
  CHECK_THROWS_WITH(parse_pipeline_schedule(""),
                    "pipeline schedule: expected one of gpipe, 1f1b, got ''");
}

TEST_CASE("P = 2, m = 3, action by action", "[pipeline]") {
  // GPipe: three forwards, then three backwards in micro-batch order. Stage 0
  // reads its input from the data and sends no gradient; stage 1 computes
  // the loss, so it sends no activation and receives no gradient.
  check_list(stage_actions(PipelineSchedule::GPipe, 2, 0, 3),
             parse_list("F0 SA0 F1 SA1 F2 SA2 RG0 B0 RG1 B1 RG2 B2"));
  check_list(stage_actions(PipelineSchedule::GPipe, 2, 1, 3),
             parse_list("RA0 F0 RA1 F1 RA2 F2 B0 SG0 B1 SG1 B2 SG2"));
  // 1F1B: stage 0 warms up with min(2 - 0 - 1, 3) = 1 forward, then pairs
  // (F1, B0) and (F2, B1), then cools down with B2. Stage 1 has no warm-up:
  // (F0, B0), (F1, B1), (F2, B2).
  check_list(stage_actions(PipelineSchedule::OneFOneB, 2, 0, 3),
             parse_list("F0 SA0 F1 SA1 RG0 B0 F2 SA2 RG1 B1 RG2 B2"));
  check_list(stage_actions(PipelineSchedule::OneFOneB, 2, 1, 3),
             parse_list("RA0 F0 B0 SG0 RA1 F1 B1 SG1 RA2 F2 B2 SG2"));
}

TEST_CASE("P = 2, m = 3 timelines with tf = 1, tb = 2", "[pipeline]") {
  SECTION("GPipe") {
    // Stage 0's forwards end at 1, 2, 3; stage 1's at 2, 3, 4 (each waits for
    // stage 0's). Stage 1's backwards run 4-6, 6-8, 8-10; stage 0's wait for
    // their gradients: 6-8, 8-10, 10-12.
    const PipelineSimulation r =
        simulate_pipeline(pipeline_actions(PipelineSchedule::GPipe, 2, 3), times(1, 2));
    CHECK(r.done_s[0] == std::vector<double>{1, 1, 2, 2, 3, 3, 6, 8, 8, 10, 10, 12});
    CHECK(r.done_s[1] == std::vector<double>{1, 2, 2, 3, 3, 4, 6, 6, 8, 8, 10, 10});
    CHECK(r.makespan_s == 12);
    CHECK(r.peak_held == std::vector<int>{3, 3});
  }
  SECTION("1F1B") {
    // Stage 0: F0 0-1, F1 1-2, then waits for B0's gradient. Stage 1: F0 1-2,
    // B0 2-4, F1 4-5, B1 5-7, F2 7-8 (stage 0 sends a2 at 7), B2 8-10. Stage 0:
    // B0 4-6, F2 6-7, B1 7-9 (gradient sent at 7), B2 10-12.
    const PipelineSimulation r =
        simulate_pipeline(pipeline_actions(PipelineSchedule::OneFOneB, 2, 3), times(1, 2));
    CHECK(r.done_s[0] == std::vector<double>{1, 1, 2, 2, 4, 6, 7, 7, 7, 9, 10, 12});
    CHECK(r.done_s[1] == std::vector<double>{1, 2, 4, 4, 4, 5, 7, 7, 7, 8, 10, 10});
    CHECK(r.makespan_s == 12);
    // Stage 0 holds F0 and F1 before B0; stage 1 frees each at once.
    CHECK(r.peak_held == std::vector<int>{2, 1});
  }
  SECTION("either schedule: 9 busy, 3 idle per stage") {
    for (PipelineSchedule s : kBoth) {
      const PipelineSimulation r = simulate_pipeline(pipeline_actions(s, 2, 3), times(1, 2));
      CHECK(r.busy_s == std::vector<double>{9, 9});
      CHECK(r.idle_s == std::vector<double>{3, 3});
      CHECK(r.bubble_fraction == 0.25);  // (P-1)/(m+P-1) = 1/4
    }
  }
}

TEST_CASE("every stage runs each micro-batch's forward and backward once, with its messages",
          "[pipeline]") {
  for (PipelineSchedule schedule : kBoth) {
    for (const auto& [P, m] : kShapes) {
      const auto lists = pipeline_actions(schedule, P, m);
      REQUIRE(static_cast<int>(lists.size()) == P);
      for (int s = 0; s < P; s++) {
        INFO(pipeline_schedule_name(schedule) << " P=" << P << " m=" << m << " stage " << s);
        const List& l = lists[s];
        const bool first = s == 0, last = s == P - 1;
        // Per micro-batch: F, B once; the four messages once each where a
        // neighbour exists, else never.
        for (int k = 0; k < m; k++) {
          CHECK(count(l, F, k) == 1);
          CHECK(count(l, B, k) == 1);
          CHECK(count(l, RA, k) == (first ? 0 : 1));
          CHECK(count(l, SG, k) == (first ? 0 : 1));
          CHECK(count(l, SA, k) == (last ? 0 : 1));
          CHECK(count(l, RG, k) == (last ? 0 : 1));
        }
        // 2m computations + 2 messages per micro-batch per neighbour.
        CHECK(l.size() == static_cast<size_t>(2 * m + 2 * m * ((first ? 0 : 1) + (last ? 0 : 1))));
        // Each message sits right beside its computation.
        for (size_t i = 0; i < l.size(); i++) {
          const int k = l[i].micro_batch;
          if (l[i].op == RA) CHECK(l.at(i + 1) == PipeAction{F, k});
          if (l[i].op == SA) CHECK(l.at(i - 1) == PipeAction{F, k});
          if (l[i].op == RG) CHECK(l.at(i + 1) == PipeAction{B, k});
          if (l[i].op == SG) CHECK(l.at(i - 1) == PipeAction{B, k});
        }
        // Backwards run in micro-batch order in both schedules.
        int next_backward = 0;
        for (const PipeAction& a : l)
          if (a.op == B) CHECK(a.micro_batch == next_backward++);
      }
      // Every send meets exactly one receive on the neighbour.
      for (int s = 0; s + 1 < P; s++)
        for (int k = 0; k < m; k++) {
          CHECK(count(lists[s], SA, k) == count(lists[s + 1], RA, k));
          CHECK(count(lists[s + 1], SG, k) == count(lists[s], RG, k));
        }
    }
  }
}

TEST_CASE("1F1B: min(P - s, m) forwards before the first backward, then strict alternation",
          "[pipeline]") {
  for (const auto& [P, m] : kShapes) {
    for (int s = 0; s < P; s++) {
      INFO("P=" << P << " m=" << m << " stage " << s);
      std::string order;  // 'F' and 'B' only
      for (const PipeAction& a : stage_actions(PipelineSchedule::OneFOneB, P, s, m))
        if (a.op == F || a.op == B) order += a.op == F ? 'F' : 'B';
      // Warm-up w = min(P - s - 1, m) forwards, then FB pairs for the other
      // m - w micro-batches, then w backwards.
      const int w = std::min(P - s - 1, m);
      std::string expected(w, 'F');
      for (int i = 0; i < m - w; i++) expected += "FB";
      expected += std::string(w, 'B');
      CHECK(order == expected);
    }
  }
}

TEST_CASE("simulated bubble and makespan match (P-1)/(m+P-1) and (m+P-1)(tf+tb)", "[pipeline]") {
  // With every stage equally fast, each stage computes m(tf + tb) and the
  // fill and drain add (P-1)(tf + tb): P-1 forward slots before the last
  // stage starts, P-1 backward slots after it ends. Idle per stage is
  // therefore (P-1)(tf + tb) and the bubble (P-1)/(m+P-1), in both schedules.
  for (const PipelineTimes& t : {times(1, 2), times(1, 1), times(0.5, 1.5)}) {
    for (PipelineSchedule schedule : kBoth) {
      for (const auto& [P, m] : kShapes) {
        INFO(pipeline_schedule_name(schedule)
             << " P=" << P << " m=" << m << " tf=" << t.forward_s << " tb=" << t.backward_s);
        const PipelineSimulation r = simulate_pipeline(pipeline_actions(schedule, P, m), t);
        const double step = t.forward_s + t.backward_s;
        CHECK_THAT(r.makespan_s, WithinRel((m + P - 1) * step, 1e-12));
        CHECK_THAT(r.bubble_fraction, WithinRel(double(P - 1) / (m + P - 1), 1e-12));
        for (int s = 0; s < P; s++) {
          CHECK_THAT(r.busy_s[s], WithinRel(m * step, 1e-12));
          CHECK(std::abs(r.idle_s[s] - (P - 1) * step) < 1e-9);
          // GPipe holds every micro-batch before its first backward; 1F1B
          // holds its warm-up plus the one in flight.
          const int held = schedule == PipelineSchedule::GPipe ? m : std::min(P - s, m);
          CHECK(r.peak_held[s] == held);
        }
      }
    }
  }
}

TEST_CASE("a message latency adds 2(P-1) latencies to GPipe, more to 1F1B", "[pipeline]") {
  // GPipe, P = 3, m = 2, tf = 1, tb = 2, latency 0.5. Forwards: stage 0 ends
  // at 1, 2; stage 1 starts at 1.5, ends 2.5, 3.5; stage 2 ends 4, 5, then
  // backwards 5-7, 7-9. Stage 1: gradients arrive 7.5, 9.5: ends 9.5, 11.5.
  // Stage 0: arrive 10, 12: ends 12, 14 = 4 x 3 + 4 x 0.5.
  const PipelineSimulation g =
      simulate_pipeline(pipeline_actions(PipelineSchedule::GPipe, 3, 2), times(1, 2, 0.5));
  CHECK(g.makespan_s == 14);
  // 1F1B, P = 2, m = 2, same times. Stage 0: F0 0-1, F1 1-2. Stage 1: F0
  // 1.5-2.5, B0 2.5-4.5 (gradient arrives 5), F1 4.5-5.5, B1 5.5-7.5 (arrives
  // 8). Stage 0: B0 5-7, B1 8-10.
  const PipelineSimulation o =
      simulate_pipeline(pipeline_actions(PipelineSchedule::OneFOneB, 2, 2), times(1, 2, 0.5));
  CHECK(o.done_s[1] == std::vector<double>{1.5, 2.5, 4.5, 4.5, 4.5, 5.5, 7.5, 7.5});
  CHECK(o.makespan_s == 10);
  CHECK(o.idle_s == std::vector<double>{4, 4});
  // 1F1B, P = 2, m = 3: as above until stage 0's B0 ends at 7; then F2 7-8
  // (arrives 8.5), B1 8-10. Stage 1: F2 8.5-9.5, B2 9.5-11.5 (arrives 12).
  // Stage 0: B2 12-14, one more than GPipe's 13: the steady state waits a
  // round trip per exchange.
  CHECK(simulate_pipeline(pipeline_actions(PipelineSchedule::OneFOneB, 2, 3), times(1, 2, 0.5))
            .makespan_s == 14);
  // GPipe in general: stage s's forward k ends at (s + k + 1)tf + s d; the
  // last stage starts its backwards at (m + P - 1)tf + (P - 1)d and the
  // gradients take P - 1 hops back: (m + P - 1)(tf + tb) + 2(P - 1)d.
  for (const auto& [P, m] : kShapes) {
    INFO("P=" << P << " m=" << m);
    const PipelineSimulation r =
        simulate_pipeline(pipeline_actions(PipelineSchedule::GPipe, P, m), times(1, 2, 0.25));
    CHECK(r.makespan_s == (m + P - 1) * 3 + 2 * (P - 1) * 0.25);
  }
}

TEST_CASE("a message longer than a forward queues behind the one before it", "[pipeline]") {
  // GPipe, P = 2, m = 2, tf = tb = 1, transfer 2. Stage 0: F0 0-1 (its
  // activation arrives 3), F1 1-2, whose activation waits for the link until
  // 3 and arrives 5. Stage 1: F0 3-4, F1 5-6, backwards 6-7 and 7-8; their
  // gradients arrive 9 and, queued, 11. Stage 0: backwards 9-10, 11-12. A
  // free link for every message would give (m + P - 1)(tf + tb) + 2(P - 1)d = 10.
  const PipelineSimulation g =
      simulate_pipeline(pipeline_actions(PipelineSchedule::GPipe, 2, 2), times(1, 1, 2));
  CHECK(g.makespan_s == 12);
  // The two directions are two links: 1F1B at P = 2, m = 1 sends one message
  // each way and waits for no other: (tf + tb) x 2 + 2d.
  CHECK(simulate_pipeline(pipeline_actions(PipelineSchedule::OneFOneB, 2, 1), times(1, 1, 2))
            .makespan_s == 8);
}

TEST_CASE("a deadlock is one line naming each blocked stage, not a hang", "[pipeline]") {
  // Both stages receive first: stage 0 waits for micro-batch 0's gradient,
  // which stage 1 sends only after the activation that stage 0 never sends.
  const std::vector<List> both_receive = {
      parse_list("RG0 F0 SA0 B0"),
      parse_list("RA0 F0 B0 SG0"),
  };
  CHECK_THROWS_WITH(simulate_pipeline(both_receive, times(1, 2)),
                    "pipeline deadlock: no stage can advance; stage 0's recv-gradient 0 waits "
                    "for stage 1, stage 1's recv-activation 0 waits for stage 0");
  // A deadlock after progress: stage 1 expects micro-batch 1 first, while
  // stage 0 sends 0 and then waits for 0's gradient.
  const std::vector<List> out_of_order = {
      parse_list("F0 SA0 RG0 B0 F1 SA1 RG1 B1"),
      parse_list("RA1 F1 RA0 F0 B0 SG0 B1 SG1"),
  };
  CHECK_THROWS_WITH(simulate_pipeline(out_of_order, times(1, 1)),
                    "pipeline deadlock: no stage can advance; stage 0's recv-gradient 0 waits "
                    "for stage 1, stage 1's recv-activation 1 waits for stage 0");
}

TEST_CASE("lists that break the pipeline's invariants are refused in one line", "[pipeline]") {
  CHECK_THROWS_WITH(simulate_pipeline({parse_list("F0 SA0 B0"), parse_list("F0 B0")}, times(1, 1)),
                    "pipeline: stage 0's send-activation 0 to stage 1 is never received");
  CHECK_THROWS_WITH(simulate_pipeline({parse_list("B0 F0")}, times(1, 1)),
                    "pipeline: stage 0's backward 0 comes before its forward");
  CHECK_THROWS_WITH(simulate_pipeline({parse_list("F0 F0")}, times(1, 1)),
                    "pipeline: stage 0's forward 0 runs a second time");
  CHECK_THROWS_WITH(simulate_pipeline({parse_list("RA0 F0 B0")}, times(1, 1)),
                    "pipeline: stage 0's recv-activation 0 names stage -1, expected 0..0");
  CHECK_THROWS_WITH(
      simulate_pipeline({parse_list("F0 SA0 SA0"), parse_list("RA0 F0")}, times(1, 1)),
      "pipeline: stage 0's send-activation 0 is sent a second time");
  CHECK_THROWS_WITH(stage_actions(PipelineSchedule::GPipe, 2, 2, 1),
                    "pipeline: stage 2 out of range 0..1");
  CHECK_THROWS_WITH(pipeline_actions(PipelineSchedule::OneFOneB, 2, 0),
                    "pipeline: expected at least 1 micro-batch, got 0");
  CHECK_THROWS_WITH(pipeline_actions(PipelineSchedule::OneFOneB, 0, 4),
                    "pipeline: expected at least 1 stage, got 0");
}

TEST_CASE("blocks split into contiguous stages, the extra ones at the front", "[pipeline]") {
  auto firsts_counts = [](const std::vector<StageBlocks>& split) {
    std::vector<std::pair<int, int>> out;
    for (const StageBlocks& b : split) out.push_back({b.first, b.count});
    return out;
  };
  using V = std::vector<std::pair<int, int>>;
  CHECK(firsts_counts(split_blocks(12, 4)) == V{{0, 3}, {3, 3}, {6, 3}, {9, 3}});
  // 10 = 4 x 2 + 2: stages 0 and 1 take one more.
  CHECK(firsts_counts(split_blocks(10, 4)) == V{{0, 3}, {3, 3}, {6, 2}, {8, 2}});
  // 7 = 3 x 2 + 1: stage 0 takes one more.
  CHECK(firsts_counts(split_blocks(7, 3)) == V{{0, 3}, {3, 2}, {5, 2}});
  CHECK(firsts_counts(split_blocks(5, 5)) == V{{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}});
  CHECK(firsts_counts(split_blocks(7, 1)) == V{{0, 7}});
  CHECK_THROWS_WITH(split_blocks(3, 4),
                    "parallel.pipeline: expected 1..3 stages (each stage holds at least one of "
                    "the 3 blocks), got 4");
  CHECK_THROWS_WITH(split_blocks(3, 0),
                    "parallel.pipeline: expected 1..3 stages (each stage holds at least one of "
                    "the 3 blocks), got 0");
  CHECK_THROWS_WITH(split_blocks(0, 1), "pipeline: the model needs at least one block, got 0");
}
