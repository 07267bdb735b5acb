// `zerotrain prepare`: a text file to train/val token shards.
//
//   zerotrain prepare --input FILE --out DIR --tokenizer byte|bpe [--vocab N]
//                     [--val-fraction F] [--shard-tokens N]
//
// The text is split by lines into blocks; a fraction F of the blocks, spread
// evenly through the file, is the validation split. byte: tokens are the
// bytes. bpe: a sentencepiece BPE model of N pieces is trained on the train
// split (DIR/tokenizer.model, .vocab) and encodes both splits. Shards are
// DIR/train_000.bin..., DIR/val_000.bin..., uint16 when the vocab fits.
// Everything is built in a hidden temporary directory next to DIR and renamed
// to DIR at the end, so an interrupted run never leaves a partial DIR.
#pragma once
#include <string>
#include <vector>

namespace zt {

// args: the words after `prepare` on the command line. Returns the exit
// status: 0 done, 1 failed (one line on stderr), 2 bad arguments (one usage
// line on stderr). Prints one line per file written, then the config values
// that select the result.
int run_prepare(const std::vector<std::string>& args);

}  // namespace zt
