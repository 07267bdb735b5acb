#include "zero/grid/pipeline_simulator.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

namespace zt {

namespace {

bool is_send(PipeOp op) { return op == PipeOp::SendActivation || op == PipeOp::SendGradient; }
bool carries_gradient(PipeOp op) {
  return op == PipeOp::SendGradient || op == PipeOp::RecvGradient;
}

// One message: (gradient?, from stage, to stage, micro-batch).
using MessageKey = std::tuple<bool, int, int, int>;

std::string at(int stage, const PipeAction& a) {
  return "stage " + std::to_string(stage) + "'s " + describe(a);
}

// What stage s is doing with its lists; advances as far as its next receive
// allows.
struct StageState {
  size_t next = 0;
  double clock = 0, busy = 0;
  int held = 0, peak = 0;
  std::set<int> forwarded, backwarded;
};

class Simulation {
 public:
  Simulation(const std::vector<std::vector<PipeAction>>& lists, const PipelineTimes& times)
      : lists_(lists), times_(times), state_(lists.size()) {
    result_.done_s.resize(lists.size());
    for (size_t s = 0; s < lists.size(); s++) result_.done_s[s].assign(lists[s].size(), 0.0);
  }

  PipelineSimulation run() {
    // Each sweep lets every stage run until it blocks on a receive whose
    // message is not sent yet. Times depend only on when messages were
    // posted, not on the sweep order, so the result is deterministic.
    for (;;) {
      bool advanced = false, finished = true;
      for (size_t s = 0; s < lists_.size(); s++) {
        while (state_[s].next < lists_[s].size() && step(static_cast<int>(s))) advanced = true;
        finished = finished && state_[s].next == lists_[s].size();
      }
      if (finished) break;
      if (!advanced) throw std::runtime_error(deadlock_line());
    }
    for (const auto& message : sent_) {
      if (!received_.count(message.first)) {
        const auto& [gradient, from, to, k] = message.first;
        throw std::runtime_error("pipeline: stage " + std::to_string(from) + "'s " +
                                 (gradient ? "send-gradient " : "send-activation ") +
                                 std::to_string(k) + " to stage " + std::to_string(to) +
                                 " is never received");
      }
    }
    return finish();
  }

 private:
  const std::vector<std::vector<PipeAction>>& lists_;
  PipelineTimes times_;
  std::vector<StageState> state_;
  std::map<MessageKey, double> sent_;  // message -> arrival time
  // (from, to) -> when the link in that direction finishes its last message
  std::map<std::pair<int, int>, double> link_free_;
  std::set<MessageKey> received_;
  PipelineSimulation result_;

  // Takes stage s's next action; false when it is a receive still waiting.
  bool step(int s) {
    StageState& st = state_[s];
    const PipeAction& a = lists_[s][st.next];
    const int k = a.micro_batch;
    if (a.op == PipeOp::Forward) {
      if (!st.forwarded.insert(k).second)
        throw std::runtime_error("pipeline: " + at(s, a) + " runs a second time");
      st.clock += times_.forward_s;
      st.busy += times_.forward_s;
      st.peak = std::max(st.peak, ++st.held);
    } else if (a.op == PipeOp::Backward) {
      if (!st.forwarded.count(k))
        throw std::runtime_error("pipeline: " + at(s, a) + " comes before its forward");
      if (!st.backwarded.insert(k).second)
        throw std::runtime_error("pipeline: " + at(s, a) + " runs a second time");
      st.clock += times_.backward_s;
      st.busy += times_.backward_s;
      st.held--;
    } else {
      const int peer = peer_stage(a.op, s);
      if (peer < 0 || peer >= static_cast<int>(lists_.size()))
        throw std::runtime_error("pipeline: " + at(s, a) + " names stage " + std::to_string(peer) +
                                 ", expected 0.." + std::to_string(lists_.size() - 1));
      const bool gradient = carries_gradient(a.op);
      if (is_send(a.op)) {
        double& link_free = link_free_[{s, peer}];
        const size_t boundary = static_cast<size_t>(std::min(s, peer));
        const double transfer = boundary < times_.boundary_message_s.size()
                                    ? times_.boundary_message_s[boundary]
                                    : times_.message_s;
        const double arrival = std::max(st.clock, link_free) + transfer;
        if (!sent_.emplace(MessageKey{gradient, s, peer, k}, arrival).second)
          throw std::runtime_error("pipeline: " + at(s, a) + " is sent a second time");
        link_free = arrival;
      } else {
        const MessageKey key{gradient, peer, s, k};
        const auto it = sent_.find(key);
        if (it == sent_.end()) return false;
        if (!received_.insert(key).second)
          throw std::runtime_error("pipeline: " + at(s, a) + " is received a second time");
        st.clock = std::max(st.clock, it->second);
      }
    }
    result_.done_s[s][st.next] = st.clock;
    st.next++;
    return true;
  }

  std::string deadlock_line() const {
    std::string line = "pipeline deadlock: no stage can advance;";
    const char* sep = " ";
    for (size_t s = 0; s < lists_.size(); s++) {
      if (state_[s].next == lists_[s].size()) continue;
      const PipeAction& a = lists_[s][state_[s].next];
      line += sep + at(static_cast<int>(s), a) + " waits for stage " +
              std::to_string(peer_stage(a.op, static_cast<int>(s)));
      sep = ", ";
    }
    return line;
  }

  PipelineSimulation finish() {
    const size_t stages = lists_.size();
    for (const StageState& st : state_) result_.makespan_s = std::max(result_.makespan_s, st.clock);
    double idle_total = 0;
    for (const StageState& st : state_) {
      result_.busy_s.push_back(st.busy);
      result_.idle_s.push_back(result_.makespan_s - st.busy);
      result_.peak_held.push_back(st.peak);
      idle_total += result_.makespan_s - st.busy;
    }
    if (result_.makespan_s > 0)
      result_.bubble_fraction = idle_total / (static_cast<double>(stages) * result_.makespan_s);
    return result_;
  }
};

}  // namespace

PipelineSimulation simulate_pipeline(const std::vector<std::vector<PipeAction>>& stages,
                                     const PipelineTimes& times) {
  if (stages.empty()) throw std::invalid_argument("pipeline: expected at least 1 stage, got 0");
  bool negative = times.forward_s < 0 || times.backward_s < 0 || times.message_s < 0;
  for (double t : times.boundary_message_s) negative = negative || t < 0;
  if (negative)
    throw std::invalid_argument("pipeline: forward, backward and message times must be >= 0");
  return Simulation(stages, times).run();
}

}  // namespace zt
