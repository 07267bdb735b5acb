// Reference kernels of the vocabulary-parallel ops (model/ops.h): tensor
// parallelism splits the vocabulary over ranks, so each rank holds a contiguous
// shard of the token embedding rows and, through the tied LM head, the same
// shard of the logits' columns. Templates over Real like cpu_kernels.h (float in
// the backend, double where a test wants it); one thread, fixed order, so equal
// inputs give bit-identical outputs.
//
// A shard is [begin, begin + count). Membership is tested as 0 <= id - begin <
// count, which cannot overflow where begin + count would.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>

#include "model/cpu/cpu_kernels.h"

namespace zt::cpu {

inline bool in_shard(int id, int begin, int count) {
  const long long local = static_cast<long long>(id) - begin;
  return local >= 0 && local < count;
}

inline void check_shard(const char* op, const char* begin_name, int begin, const char* count_name,
                        int count) {
  if (begin < 0 || count < 0) {
    throw std::runtime_error(std::string(op) + ": " + begin_name + " = " + std::to_string(begin) +
                             ", " + count_name + " = " + std::to_string(count) +
                             ", expected both >= 0");
  }
}

// ---- embedding rows ----
// Forward writes every output row: the table row of a token inside the shard,
// zeros for the others, so that summing the shards' outputs gives the full
// lookup. Backward walks the rows n in order and adds each dout row into its
// token's table row, the same order as encoder_backward, so one shard's rows of
// the gradient equal encoder_backward's bit for bit.
template <typename Real>
void embedding_rows_forward(Real* out, const int* tokens, const Real* table, int row_begin,
                            int rows, int N, int C) {
  check_shard("embedding_rows_forward", "row_begin", row_begin, "rows", rows);
  for (int n = 0; n < N; ++n) {
    Real* o = out + static_cast<size_t>(n) * C;
    if (in_shard(tokens[n], row_begin, rows)) {
      const Real* e = table + static_cast<size_t>(tokens[n] - row_begin) * C;
      std::copy(e, e + C, o);
    } else {
      std::fill(o, o + C, Real(0));
    }
  }
}

template <typename Real>
void embedding_rows_backward(Real* dtable, const Real* dout, const int* tokens, int row_begin,
                             int rows, int N, int C) {
  check_shard("embedding_rows_backward", "row_begin", row_begin, "rows", rows);
  for (int n = 0; n < N; ++n) {
    if (!in_shard(tokens[n], row_begin, rows)) continue;
    axpy(dtable + static_cast<size_t>(tokens[n] - row_begin) * C, Real(1),
         dout + static_cast<size_t>(n) * C, C);
  }
}

// ---- sharded cross-entropy ----
// The loss over the whole vocabulary is lse_all - logit[target] with lse_all =
// log sum_p exp(lse_p), lse_p each shard's log-sum-exp: so each shard reduces its
// columns to one number per row, the shards' numbers are gathered and merged,
// and the target's logit comes from the one shard that holds it (the others
// contribute 0 to a sum over shards). As in cross_entropy_forward, the max is
// subtracted and the sum of exponentials accumulated in double.

// log(sum exp(x[0..n))) with the max subtracted; -inf for n = 0 or all -inf.
template <typename Real>
double logsumexp_of(const Real* x, int n, size_t stride) {
  double row_max = -std::numeric_limits<double>::infinity();
  for (int j = 0; j < n; ++j) row_max = std::max(row_max, static_cast<double>(x[j * stride]));
  if (row_max == -std::numeric_limits<double>::infinity()) return row_max;
  double sum = 0;
  for (int j = 0; j < n; ++j) sum += std::exp(static_cast<double>(x[j * stride]) - row_max);
  return row_max + std::log(sum);
}

template <typename Real>
void logits_logsumexp(Real* lse, const Real* logits, int N, int V) {
  if (V < 0)
    throw std::runtime_error("logits_logsumexp: V = " + std::to_string(V) + ", expected >= 0");
  for (int n = 0; n < N; ++n)
    lse[n] = static_cast<Real>(logsumexp_of(logits + static_cast<size_t>(n) * V, V, 1));
}

template <typename Real>
void logits_pick(Real* picked, const Real* logits, const int* targets, int col_begin, int N,
                 int V) {
  check_shard("logits_pick", "col_begin", col_begin, "V", V);
  for (int n = 0; n < N; ++n) {
    picked[n] = in_shard(targets[n], col_begin, V)
                    ? logits[static_cast<size_t>(n) * V + (targets[n] - col_begin)]
                    : Real(0);
  }
}

// Row n reads parts[p * N + n] for every p before writing lse[n], and no other
// row reads index n of the first part: so lse may be parts itself.
template <typename Real>
void logsumexp_merge(Real* lse, const Real* parts, int n_parts, int N) {
  if (n_parts < 1) {
    throw std::runtime_error("logsumexp_merge: n_parts = " + std::to_string(n_parts) +
                             ", expected >= 1");
  }
  for (int n = 0; n < N; ++n)
    lse[n] = static_cast<Real>(logsumexp_of(parts + n, n_parts, static_cast<size_t>(N)));
}

template <typename Real>
void losses_from_lse(Real* losses, const Real* lse, const Real* picked, int N) {
  for (int n = 0; n < N; ++n) losses[n] = lse[n] - picked[n];
}

// The softmax needs no sum here: lse already normalises over the whole
// vocabulary, so each logit maps to its gradient on its own.
template <typename Real>
void cross_entropy_backward_from_lse(Real* logits, const Real* lse, const int* targets,
                                     int col_begin, int N, int V, Real dloss) {
  check_shard("cross_entropy_backward_from_lse", "col_begin", col_begin, "V", V);
  for (int n = 0; n < N; ++n) {
    Real* x = logits + static_cast<size_t>(n) * V;
    const Real row_lse = lse[n];
    for (int v = 0; v < V; ++v) x[v] = dloss * std::exp(x[v] - row_lse);
    if (in_shard(targets[n], col_begin, V)) x[targets[n] - col_begin] -= dloss;
  }
}

}  // namespace zt::cpu
