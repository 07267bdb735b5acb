// Documents from text files, for `prepare --tokenizer gpt2`: which files an
// input names, where a document begins and ends, and the pieces a long
// document is cut into for parallel encoding.
#pragma once
#include <cstdint>
#include <fstream>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace zt {

// The files an --input names: the file itself; every regular file under a
// directory (recursively, names starting with '.' skipped); or the files a
// glob matches. Sorted bytewise by path. Throws DataError naming the input
// when it names no file.
std::vector<std::string> list_text_inputs(const std::string& input);

enum class DocumentMode {
  kFile,        // a whole file is one document, byte for byte
  kParagraphs,  // blank lines (empty or only spaces, tabs, CR) separate documents; a
                // document is its lines, each with its line break; blank lines are dropped
};

// Returns the first position >= from where `text` may be cut without
// changing its encoding, or std::string_view::npos.
using SafeCut = std::function<size_t(std::string_view text, size_t from)>;

struct TextPiece {
  std::string text;
  bool starts_document = false;
};

// Streams the documents of `files` in order as pieces of about piece_bytes
// (a piece ends where its document does, or at the first safe cut after
// piece_bytes). Memory stays bounded: a document without a safe cut within
// max_piece_bytes is an error. Empty documents are skipped.
class DocumentReader {
 public:
  static constexpr size_t kMaxPieceBytes = size_t(64) << 20;

  DocumentReader(std::vector<std::string> files, DocumentMode mode, size_t piece_bytes,
                 SafeCut safe_cut, size_t max_piece_bytes = kMaxPieceBytes);
  // The next piece; false when every file has been read.
  bool next(TextPiece* piece);
  int64_t bytes_read() const { return bytes_read_; }
  int64_t documents() const { return documents_; }

 private:
  bool fill();  // reads the next block; false at the end of the last file
  void consume_paragraph_bytes(const char* p, size_t n);
  void end_document();
  void cut_ready_pieces();
  void emit(std::string text);

  std::vector<std::string> files_;
  DocumentMode mode_;
  size_t piece_bytes_;
  SafeCut safe_cut_;
  size_t max_piece_bytes_;
  size_t file_index_ = 0;
  std::ifstream in_;
  bool file_open_ = false;
  int64_t file_offset_ = 0;  // bytes of the current file consumed, for messages
  std::string document_;     // the unemitted text of the current document
  bool in_document_ = false, document_started_ = false;
  std::string blank_run_;          // paragraphs: the current line's bytes while they are all blank
  bool line_has_content_ = false;  // paragraphs: the current line is not blank
  std::vector<TextPiece> ready_;
  size_t ready_next_ = 0;
  int64_t bytes_read_ = 0, documents_ = 0;
};

}  // namespace zt
