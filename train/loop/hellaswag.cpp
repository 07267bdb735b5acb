#include "train/loop/hellaswag.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "data/shard.h"

namespace zt {
namespace {

// One ending's row, as far as it fits the model.
struct Row {
  const std::vector<int>* context = nullptr;
  const std::vector<int>* ending = nullptr;
  size_t size() const { return context->size() + ending->size(); }
  int at(size_t j) const {
    return j < context->size() ? (*context)[j] : (*ending)[j - context->size()];
  }
};

}  // namespace

HellaswagSet tokenize_hellaswag(const std::vector<HellaswagExample>& examples,
                                const Tokenizer& tokenizer, int model_vocab,
                                const std::string& source) {
  HellaswagSet set;
  set.source = source;
  auto check = [&](const std::vector<int>& ids, int line) {
    for (int id : ids)
      if (id < 0 || id >= model_vocab)
        throw DataError(source + ":" + std::to_string(line) + ": token " + std::to_string(id) +
                        " is outside the model's vocabulary (" + std::to_string(model_vocab) + ")");
  };
  for (const HellaswagExample& ex : examples) {
    HellaswagSet::Example e;
    e.context = tokenizer.encode(ex.context);
    check(e.context, ex.line);
    for (size_t k = 0; k < 4; ++k) {
      e.endings[k] = tokenizer.encode(" " + ex.endings[k]);
      check(e.endings[k], ex.line);
      set.longest_row = std::max(set.longest_row, e.context.size() + e.endings[k].size());
    }
    e.label = ex.label;
    set.examples.push_back(std::move(e));
  }
  return set;
}

int hellaswag_positions(const HellaswagSet& set, int seq_len, int multiple) {
  const int needed = int(std::max<size_t>(1, set.longest_row - 1));
  const int step = std::lcm(16, multiple);
  return std::min(seq_len, (needed + step - 1) / step * step);
}

std::vector<std::array<EndingLoss, 4>> hellaswag_losses(GPT& model, ModuleHooks& hooks,
                                                        const HellaswagSet& set, int rank,
                                                        int world,
                                                        const TokenLossForward& forward) {
  const size_t n = set.examples.size();
  const size_t B = size_t(model.B()), T = size_t(model.T());
  std::vector<Row> rows;
  for (size_t e = size_t(rank); e < n; e += size_t(world))
    for (size_t k = 0; k < 4; ++k)
      rows.push_back(Row{&set.examples[e].context, &set.examples[e].endings[k]});
  // Every rank makes as many forwards as the rank with the most rows (rank 0).
  const size_t most_rows = 4 * ((n + size_t(world) - 1) / size_t(world));
  const size_t forwards = (most_rows + B - 1) / B;

  std::vector<std::array<EndingLoss, 4>> losses(rows.size() / 4);
  std::vector<int> inputs(B * T), targets(B * T);
  for (size_t f = 0; f < forwards; ++f) {
    std::fill(inputs.begin(), inputs.end(), 0);
    std::fill(targets.begin(), targets.end(), 0);
    for (size_t b = 0; b < B && f * B + b < rows.size(); ++b) {
      const Row& row = rows[f * B + b];
      const size_t keep = std::min(row.size(), T + 1), offset = row.size() - keep;
      for (size_t t = 0; t + 1 < keep; ++t) {
        inputs[b * T + t] = row.at(offset + t);
        targets[b * T + t] = row.at(offset + t + 1);
      }
    }
    if (!forward) model.forward_loss(inputs.data(), targets.data(), hooks);
    const std::vector<float>& token_losses =
        forward ? forward(inputs.data(), targets.data()) : model.token_losses();
    for (size_t b = 0; b < B && f * B + b < rows.size(); ++b) {
      const size_t r = f * B + b;
      const Row& row = rows[r];
      const size_t keep = std::min(row.size(), T + 1), offset = row.size() - keep;
      EndingLoss& out = losses[r / 4][r % 4];
      // Ending token j is predicted at position j - offset - 1 of the window.
      for (size_t j = std::max(row.context->size(), offset + 1); j < row.size(); ++j) {
        out.sum += double(token_losses[b * T + (j - offset - 1)]);
        ++out.tokens;
      }
    }
  }
  return losses;
}

HellaswagResult score_hellaswag(GPT& model, ModuleHooks& hooks, const HellaswagSet& set, int rank,
                                int world, const std::function<double(double)>& sum_over_ranks,
                                const TokenLossForward& forward) {
  const std::vector<std::array<EndingLoss, 4>> losses =
      hellaswag_losses(model, hooks, set, rank, world, forward);
  HellaswagResult local;
  const size_t T1 = size_t(model.T()) + 1;
  for (size_t i = 0; i < losses.size(); ++i) {
    const HellaswagSet::Example& ex = set.examples[size_t(rank) + i * size_t(world)];
    int best = 0, best_norm = 0;
    for (int k = 1; k < 4; ++k) {
      if (losses[i][size_t(k)].sum < losses[i][size_t(best)].sum) best = k;
      if (losses[i][size_t(k)].mean() < losses[i][size_t(best_norm)].mean()) best_norm = k;
    }
    ++local.examples;
    local.correct += best == ex.label;
    local.correct_norm += best_norm == ex.label;
    for (const auto& ending : ex.endings) local.rows_cut += ex.context.size() + ending.size() > T1;
  }
  HellaswagResult total;
  total.examples = int64_t(sum_over_ranks(double(local.examples)));
  total.correct = int64_t(sum_over_ranks(double(local.correct)));
  total.correct_norm = int64_t(sum_over_ranks(double(local.correct_norm)));
  total.rows_cut = int64_t(sum_over_ranks(double(local.rows_cut)));
  return total;
}

std::string describe_hellaswag(const HellaswagResult& r, const std::string& source) {
  char line[512];
  std::snprintf(line, sizeof line,
                "hellaswag: acc %.4f (%lld/%lld, lowest summed loss) | acc_norm %.4f (%lld/%lld, "
                "lowest mean loss per token) | %s",
                r.acc(), static_cast<long long>(r.correct), static_cast<long long>(r.examples),
                r.acc_norm(), static_cast<long long>(r.correct_norm),
                static_cast<long long>(r.examples), source.c_str());
  std::string out = line;
  if (r.rows_cut > 0)
    out +=
        " | " + std::to_string(r.rows_cut) + " rows longer than seq_len + 1 kept their last tokens";
  return out;
}

}  // namespace zt
