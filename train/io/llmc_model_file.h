// llm.c's GPT-2 model file: a header of 256 int32 (magic 20240326; version 3 =
// fp32 weights, 5 = bf16; then max_seq_len, vocab_size, n_layer, n_head,
// n_embd, padded_vocab_size) followed by the tensors grouped by kind across
// layers (wte, wpe, all ln_1 weights, all ln_1 biases, ..., ln_f weight, bias).
// zerotrain groups by layer instead, so reading and writing permute.
#pragma once
#include <string>
#include <vector>

#include "model/param_table.h"

namespace zt {

// Writes fp32 (version 3) weights given in zerotrain's flat layout, atomically
// (train/io/atomic_file.h).
void write_llmc_model(const std::string& path, const ParamTable& table,
                      const std::vector<float>& flat);
// Reads version 3 or 5 into zerotrain's flat layout; the file's shape must match
// the table's config (vocab_size is compared with the padded vocab size) and its
// size must be exactly what that shape needs. Errors are DataErrors naming the file.
std::vector<float> read_llmc_model(const std::string& path, const ParamTable& table);

}  // namespace zt
