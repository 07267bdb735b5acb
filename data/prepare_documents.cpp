// Pieces of documents are grouped into work items of about 1 MiB, encoded by
// up to `threads` std::async tasks, and consumed strictly in order, so the
// stream is the same for any thread count. At most 2 x threads items are in
// flight, which bounds memory whatever the input size.
#include "data/prepare_documents.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <future>
#include <memory>

#include "data/gpt2_pretokenizer.h"
#include "data/gpt2_tokenizer.h"
#include "data/interruption.h"
#include "data/shard.h"
#include "data/shard_writer.h"
#include "data/text_documents.h"
#include "data/tokenizer.h"

namespace zt {
namespace {

constexpr size_t kPieceBytes = size_t(1) << 20;
constexpr double kProgressSeconds = 2.0;

using Clock = std::chrono::steady_clock;

std::vector<uint32_t> encode_item(const Tokenizer& tokenizer, const std::vector<TextPiece>& item) {
  std::vector<uint32_t> tokens;
  for (const TextPiece& piece : item) {
    if (piece.starts_document) tokens.push_back(uint32_t(tokenizer.eot_id()));
    for (int id : tokenizer.encode(piece.text)) tokens.push_back(uint32_t(id));
  }
  return tokens;
}

std::string megabytes(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", bytes / 1e6);
  return buf;
}

std::string duration(double s) {
  char buf[32];
  const long t = long(s + 0.5);
  std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  return buf;
}

}  // namespace

void prepare_documents(const PrepareOptions& o, std::ostream& out, std::ostream& progress) {
  if (!gpt2_encoding_available())
    throw DataError("--tokenizer " + o.tokenizer +
                    ": GPT-2 encoding is unavailable in this build (built without PCRE2, "
                    "libpcre2-dev)");
  std::unique_ptr<Tokenizer> tokenizer = make_tokenizer(o.tokenizer);
  if (tokenizer->eot_id() < 0)
    throw DataError("--tokenizer " + o.tokenizer + ": no end-of-text token to separate documents");
  const std::vector<std::string> files = list_text_inputs(o.input);
  int64_t input_bytes = 0;
  for (const std::string& f : files) {
    struct stat st;
    if (::stat(f.c_str(), &st) == 0) input_bytes += int64_t(st.st_size);
  }
  WorkDirectory work(o.out);
  const int64_t chunk_tokens = split_chunk_tokens(input_bytes, o.val_fraction);
  const bool wide = tokenizer->vocab_size() > 65536;
  ShardWriter train(work.path(), "train", o.shard_tokens, wide),
      val(work.path(), "val", o.shard_tokens, wide);

  DocumentReader reader(
      files, o.documents == "paragraphs" ? DocumentMode::kParagraphs : DocumentMode::kFile,
      kPieceBytes, &Gpt2PreTokenizer::safe_cut);
  const int threads = std::max(1, o.threads);
  std::deque<std::future<std::vector<uint32_t>>> in_flight;
  int64_t stream_tokens = 0;
  auto write = [&](const std::vector<uint32_t>& tokens) {
    for (uint32_t t : tokens) {
      (is_validation_chunk(stream_tokens / chunk_tokens, o.val_fraction) ? val : train).add(t);
      ++stream_tokens;
    }
  };

  const auto t0 = Clock::now();
  auto last_report = t0;
  auto report = [&] {
    const auto now = Clock::now();
    if (std::chrono::duration<double>(now - last_report).count() < kProgressSeconds) return;
    last_report = now;
    const double s = std::chrono::duration<double>(now - t0).count();
    const double done = double(reader.bytes_read()), rate = done / s;
    progress << "prepare: " << megabytes(done) << " of " << megabytes(double(input_bytes)) << " ("
             << int(100 * done / std::max<double>(1, double(input_bytes))) << "%) | "
             << megabytes(rate) << "/s | " << stream_tokens << " tokens | ETA "
             << duration(rate > 0 ? (double(input_bytes) - done) / rate : 0) << std::endl;
  };

  std::vector<TextPiece> item;
  size_t item_bytes = 0;
  auto submit = [&] {
    if (item.empty()) return;
    if (threads == 1) {
      write(encode_item(*tokenizer, item));
    } else {
      if (in_flight.size() >= size_t(2 * threads)) {
        write(in_flight.front().get());
        in_flight.pop_front();
      }
      in_flight.push_back(
          std::async(std::launch::async, encode_item, std::cref(*tokenizer), std::move(item)));
    }
    item.clear();
    item_bytes = 0;
    report();
  };
  TextPiece piece;
  while (reader.next(&piece)) {
    check_interrupted();
    item_bytes += piece.text.size();
    item.push_back(std::move(piece));
    if (item_bytes >= kPieceBytes) submit();
  }
  submit();
  for (auto& f : in_flight) write(f.get());
  in_flight.clear();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();

  if (stream_tokens == 0) throw DataError(o.input + ": no text to encode (every file is empty)");
  auto train_shards = train.finish();
  auto val_shards = val.finish();
  int64_t val_count = 0;
  for (const auto& s : val_shards) val_count += s.second;
  if (val_count == 0 || val_count == stream_tokens)
    throw DataError(o.input + ": " + std::to_string(stream_tokens) +
                    " tokens are too few to split with --val-fraction " +
                    std::to_string(o.val_fraction));
  work.commit();

  char line[256];
  std::snprintf(line, sizeof line,
                "encoded %zu file%s, %lld document%s, %s into %lld tokens in %.2f s (%.1f MB/s "
                "with %d thread%s)",
                files.size(), files.size() == 1 ? "" : "s",
                static_cast<long long>(reader.documents()), reader.documents() == 1 ? "" : "s",
                megabytes(double(reader.bytes_read())).c_str(),
                static_cast<long long>(stream_tokens), seconds,
                double(reader.bytes_read()) / 1e6 / std::max(seconds, 1e-9), threads,
                threads == 1 ? "" : "s");
  out << line << "\n";
  for (const auto* shards : {&train_shards, &val_shards})
    for (const auto& shard : *shards)
      out << "wrote " << o.out << "/" << shard.first << ": " << shard.second << " tokens ("
          << (wide ? "uint32" : "uint16") << ")\n";
  out << "use: data.train=" << o.out << "/train_*.bin data.val=" << o.out
      << "/val_*.bin data.tokenizer=" << o.tokenizer << std::endl;
}

}  // namespace zt
