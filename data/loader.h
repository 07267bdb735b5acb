// Rank-aware batch sampling over token shards, stateless in the step.
//
// All shards of a glob, in sorted order, form one token stream. Sequence s is
// tokens [s*T, s*T + T] (T+1 tokens: T inputs, targets shifted by one), so an
// epoch has S = (tokens - 1) / T sequences. Optimizer step k consumes the
// global positions k*G .. k*G + G-1 with G = world * grad_accum * B; micro-step
// m of rank r takes the B positions starting at k*G + (m*world + r)*B. Global
// position g belongs to epoch g / S and uses sequence perm_epoch[g % S], where
// perm_epoch is a Fisher-Yates shuffle seeded by (seed, epoch), or the identity
// without shuffling (evaluation reads in file order).
//
// Hence a batch depends only on (step, micro_step): resuming needs no loader
// state, and W ranks together read exactly the sequences that one rank with
// grad_accum * W micro-steps would read.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace zt {

class DataLoader {
 public:
  // Loads and validates every shard of files_glob (tokens < vocab_size) before
  // checking the other arguments; throws DataError with one line.
  DataLoader(const std::string& files_glob, int vocab_size, int B, int T, int rank, int world,
             int grad_accum_steps, uint64_t seed, bool shuffle);

  // Fills inputs and targets (each B*T, row-major [b][t]) for this rank's
  // micro-step `micro_step` (0 <= micro_step < grad_accum_steps) of optimizer
  // step `step` (>= 0).
  void micro_batch(int64_t step, int micro_step, int* inputs, int* targets);

  int64_t num_sequences() const { return num_sequences_; }
  int64_t num_tokens() const { return num_tokens_; }
  const std::vector<std::string>& files() const { return files_; }

 private:
  int64_t sequence_at(int64_t global_position);
  int token_at(int64_t index) const;

  std::vector<std::string> files_;
  std::string glob_;
  // The stream is stored as uint16 when the vocab allows it, halving resident
  // memory for GPT-2-sized vocabularies; exactly one of these is filled.
  std::vector<uint16_t> narrow_tokens_;
  std::vector<uint32_t> wide_tokens_;
  int64_t num_tokens_ = 0;
  int64_t num_sequences_ = 0;
  int B_, T_, rank_, world_, grad_accum_;
  uint64_t seed_;
  bool shuffle_;
  int64_t cached_epoch_ = -1;
  std::vector<int64_t> cached_permutation_;
};

}  // namespace zt
