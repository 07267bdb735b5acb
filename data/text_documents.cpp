#include "data/text_documents.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>

#include "data/input/input_file.h"
#include "data/input/input_tree.h"
#include "data/shard.h"

namespace zt {

namespace {

constexpr size_t kReadBlockBytes = size_t(1) << 20;

bool is_directory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Far more files than any corpus folder holds; a bound on the list's memory.
constexpr size_t kMaxInputFiles = size_t(1) << 20;

}  // namespace

std::vector<std::string> list_text_inputs(const std::string& input) {
  const std::string problem = input_path_problem(input);
  if (problem.empty()) return {input};
  if (is_directory(input)) {
    std::vector<std::string> files = list_regular_files(input, kMaxInputFiles);
    if (files.empty()) throw DataError(input + ": the directory holds no files");
    return files;
  }
  if (problem != kInputAbsent) throw DataError(input + ": the input " + problem);
  std::vector<std::string> files;
  for (const std::string& path : expand_glob(input)) {
    const std::string match_problem = input_path_problem(path);
    if (match_problem.empty()) files.push_back(path);
    else if (!is_directory(path)) throw DataError(path + ": the input " + match_problem);
  }
  if (files.empty()) throw DataError(input + ": matches no regular files");
  std::sort(files.begin(), files.end());
  return files;
}

DocumentReader::DocumentReader(std::vector<std::string> files, DocumentMode mode,
                               size_t piece_bytes, SafeCut safe_cut, size_t max_piece_bytes)
    : files_(std::move(files)), mode_(mode), piece_bytes_(std::max<size_t>(1, piece_bytes)),
      safe_cut_(std::move(safe_cut)), max_piece_bytes_(max_piece_bytes) {}

bool DocumentReader::next(TextPiece* piece) {
  while (ready_next_ == ready_.size()) {
    ready_.clear();
    ready_next_ = 0;
    if (!fill()) return false;
  }
  *piece = std::move(ready_[ready_next_++]);
  return true;
}

bool DocumentReader::fill() {
  if (!file_open_) {
    if (file_index_ == files_.size()) return false;
    in_.open(files_[file_index_], std::ios::binary);
    if (!in_) throw DataError(files_[file_index_] + ": cannot open for reading");
    file_open_ = true;
    file_offset_ = 0;
  }
  std::string block(kReadBlockBytes, '\0');
  in_.read(&block[0], std::streamsize(block.size()));
  const size_t got = size_t(in_.gcount());
  if (in_.bad()) throw DataError(files_[file_index_] + ": read error");
  block.resize(got);
  bytes_read_ += int64_t(got);
  if (mode_ == DocumentMode::kFile) {
    if (got > 0) in_document_ = true;
    document_ += block;
  } else {
    consume_paragraph_bytes(block.data(), block.size());
  }
  file_offset_ += int64_t(got);
  cut_ready_pieces();
  if (got < kReadBlockBytes) {  // end of this file, and of its last document
    in_.close();
    in_.clear();
    file_open_ = false;
    blank_run_.clear();
    line_has_content_ = false;
    end_document();
    ++file_index_;
  }
  return true;
}

void DocumentReader::consume_paragraph_bytes(const char* p, size_t n) {
  size_t i = 0;
  while (i < n) {
    if (line_has_content_) {
      const char* nl = static_cast<const char*>(std::memchr(p + i, '\n', n - i));
      const size_t end = nl ? size_t(nl - p) + 1 : n;
      document_.append(p + i, end - i);
      if (nl) line_has_content_ = false;
      i = end;
      continue;
    }
    const char c = p[i++];
    if (c == '\n') {  // a blank line ends the document
      blank_run_.clear();
      end_document();
    } else if (c == ' ' || c == '\t' || c == '\r') {
      blank_run_ += c;
      if (blank_run_.size() > max_piece_bytes_)
        throw DataError(files_[file_index_] + ": a line of more than " +
                        std::to_string(max_piece_bytes_) + " blanks");
    } else {
      in_document_ = true;
      document_ += blank_run_;
      blank_run_.clear();
      document_ += c;
      line_has_content_ = true;
    }
  }
}

void DocumentReader::emit(std::string text) {
  ready_.push_back(TextPiece{std::move(text), !document_started_});
  document_started_ = true;
}

void DocumentReader::end_document() {
  if (!in_document_) return;
  if (!document_.empty()) emit(std::move(document_));
  document_.clear();
  ++documents_;
  in_document_ = false;
  document_started_ = false;
}

void DocumentReader::cut_ready_pieces() {
  while (document_.size() >= piece_bytes_) {
    const size_t cut = safe_cut_(document_, piece_bytes_);
    if (cut == std::string_view::npos || cut >= document_.size()) {
      if (document_.size() > max_piece_bytes_)
        throw DataError(files_[file_index_] + ": no place to cut the text between bytes " +
                        std::to_string(file_offset_ - int64_t(document_.size())) + " and " +
                        std::to_string(file_offset_) + " (" + std::to_string(max_piece_bytes_) +
                        " bytes without an ASCII letter or digit before ASCII punctuation or "
                        "whitespace); split the file");
      return;
    }
    emit(document_.substr(0, cut));
    document_.erase(0, cut);
  }
}

}  // namespace zt
