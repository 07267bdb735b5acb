// DataLoader: the whole token stream in memory, sequences addressed by global
// position (see loader.h for the indexing). The only state is a cache of the
// most recent epoch's permutation, which the sequence a position maps to does
// not depend on.
#include "data/loader.h"

#include <cstdint>
#include <utility>

#include "data/shard.h"
#include "data/splitmix64.h"

namespace zt {

DataLoader::DataLoader(const std::string& files_glob, int vocab_size, int B, int T, int rank,
                       int world, int grad_accum_steps, uint64_t seed, bool shuffle)
    : files_(expand_glob(files_glob)), glob_(files_glob), B_(B), T_(T), rank_(rank), world_(world),
      grad_accum_(grad_accum_steps), seed_(seed), shuffle_(shuffle) {
  const bool narrow = vocab_size <= 65536;
  for (const std::string& file : files_) {
    std::vector<uint32_t> tokens = read_shard(file, vocab_size);
    if (narrow) narrow_tokens_.insert(narrow_tokens_.end(), tokens.begin(), tokens.end());
    else wide_tokens_.insert(wide_tokens_.end(), tokens.begin(), tokens.end());
  }
  num_tokens_ = int64_t(narrow ? narrow_tokens_.size() : wide_tokens_.size());

  auto require = [&](bool ok, const std::string& what) {
    if (!ok) throw DataError(glob_ + ": " + what);
  };
  require(B > 0, "micro-batch size B must be positive, got " + std::to_string(B));
  require(T > 0, "sequence length T must be positive, got " + std::to_string(T));
  require(world > 0, "world size must be positive, got " + std::to_string(world));
  require(rank >= 0 && rank < world,
          "rank " + std::to_string(rank) + " is outside [0, " + std::to_string(world) + ")");
  require(grad_accum_steps > 0,
          "gradient accumulation steps must be positive, got " + std::to_string(grad_accum_steps));
  num_sequences_ = (num_tokens_ - 1) / T;
  require(num_sequences_ >= B, std::to_string(num_tokens_) + " tokens in " +
                                   std::to_string(files_.size()) + " file(s) give " +
                                   std::to_string(num_sequences_) +
                                   " sequences of T+1 = " + std::to_string(T + 1) +
                                   " tokens, fewer than the micro-batch B = " + std::to_string(B));
}

int DataLoader::token_at(int64_t index) const {
  return narrow_tokens_.empty() ? int(wide_tokens_[size_t(index)])
                                : int(narrow_tokens_[size_t(index)]);
}

int64_t DataLoader::sequence_at(int64_t global_position) {
  const int64_t within_epoch = global_position % num_sequences_;
  if (!shuffle_) return within_epoch;
  const int64_t epoch = global_position / num_sequences_;
  if (epoch != cached_epoch_) {
    // Fisher-Yates from the back: position i swaps with a uniform j <= i.
    SplitMix64 rng(mix64(seed_) + mix64(uint64_t(epoch) ^ 0xD1B54A32D192ED03ULL));
    cached_permutation_.resize(size_t(num_sequences_));
    for (int64_t i = 0; i < num_sequences_; ++i) cached_permutation_[size_t(i)] = i;
    for (int64_t i = num_sequences_ - 1; i > 0; --i) {
      int64_t j = int64_t(rng.below(uint64_t(i) + 1));
      std::swap(cached_permutation_[size_t(i)], cached_permutation_[size_t(j)]);
    }
    cached_epoch_ = epoch;
  }
  return cached_permutation_[size_t(within_epoch)];
}

void DataLoader::micro_batch(int64_t step, int micro_step, int* inputs, int* targets) {
  if (step < 0) throw DataError(glob_ + ": step must be >= 0, got " + std::to_string(step));
  if (micro_step < 0 || micro_step >= grad_accum_)
    throw DataError(glob_ + ": micro-step " + std::to_string(micro_step) + " is outside [0, " +
                    std::to_string(grad_accum_) + ")");
  const int64_t global_batch = int64_t(world_) * grad_accum_ * B_;
  const int64_t first = step * global_batch + (int64_t(micro_step) * world_ + rank_) * B_;
  for (int b = 0; b < B_; ++b) {
    const int64_t start = sequence_at(first + b) * T_;
    int* in = inputs + int64_t(b) * T_;
    int* out = targets + int64_t(b) * T_;
    for (int t = 0; t < T_; ++t) {
      in[t] = token_at(start + t);
      out[t] = token_at(start + t + 1);
    }
  }
}

}  // namespace zt
