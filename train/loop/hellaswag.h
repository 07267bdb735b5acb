// HellaSwag as llm.c evaluates it (dev/data/hellaswag.py): each of the four
// endings is a row, the context's tokens followed by the tokens of " " +
// ending (encoded separately, so the context's ids are the same in all four
// rows), and is scored by the cross-entropy of its ending tokens, each
// predicted from everything before it. `acc` picks the ending with the
// lowest summed loss, `acc_norm` the one with the lowest mean loss per token.
//
// Rows run through the model like any evaluation, B rows per forward of T
// positions (shorter rows are padded; causal attention keeps padding out of
// the scored positions). Example i belongs to rank i mod W; every rank makes
// the same number of forwards (padding ones where it has fewer rows), so the
// model may be reached through a ZeRO stage-3 engine, whose every forward is
// collective. Counts are summed over the ranks.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/hellaswag_file.h"
#include "data/tokenizer.h"
#include "model/gpt.h"
#include "model/module_hooks.h"

namespace zt {

struct HellaswagSet {
  struct Example {
    std::vector<int> context;
    std::array<std::vector<int>, 4> endings;
    int label = 0;
  };
  std::vector<Example> examples;
  std::string source;      // the file, for messages
  size_t longest_row = 0;  // tokens, context + ending
};

// Encodes every example. Throws DataError when a token is outside the
// model's vocabulary.
HellaswagSet tokenize_hellaswag(const std::vector<HellaswagExample>& examples,
                                const Tokenizer& tokenizer, int model_vocab,
                                const std::string& source);

// Positions a scoring model needs: the longest row less one (its last token
// is only a target), rounded up to a multiple of 16 and of `multiple` (the
// tensor group under sequence parallelism, which splits them), at most the
// model's seq_len (a multiple of both, or of `multiple` alone).
int hellaswag_positions(const HellaswagSet& set, int seq_len, int multiple = 1);

struct EndingLoss {
  double sum = 0;
  int tokens = 0;  // ending tokens scored (fewer than the ending's when a row was cut)
  double mean() const { return tokens > 0 ? sum / tokens : 0; }
};

// One forward of the model's B x T inputs and targets, returning each
// token's loss on the host: empty means the model's own forward_loss; a
// pipeline passes its stages' (PipelineStage::forward_losses).
using TokenLossForward = std::function<const std::vector<float>&(const int*, const int*)>;

// The losses of the endings of this rank's examples (rank, rank + W, ...), in
// that order; rows longer than model.T() + 1 keep their last T + 1 tokens.
std::vector<std::array<EndingLoss, 4>> hellaswag_losses(GPT& model, ModuleHooks& hooks,
                                                        const HellaswagSet& set, int rank,
                                                        int world,
                                                        const TokenLossForward& forward = {});

struct HellaswagResult {
  int64_t examples = 0, correct = 0, correct_norm = 0, rows_cut = 0;
  double acc() const { return examples ? double(correct) / double(examples) : 0; }
  double acc_norm() const { return examples ? double(correct_norm) / double(examples) : 0; }
};

// Scores the whole set over the ranks; `sum_over_ranks` adds a value over
// every rank (the identity at W = 1). Ties go to the lower ending index.
HellaswagResult score_hellaswag(GPT& model, ModuleHooks& hooks, const HellaswagSet& set, int rank,
                                int world, const std::function<double(double)>& sum_over_ranks,
                                const TokenLossForward& forward = {});

// "hellaswag: acc 0.2940 (2952/10042) | acc_norm 0.2955 (2967/10042) | FILE"
std::string describe_hellaswag(const HellaswagResult& r, const std::string& source);

}  // namespace zt
