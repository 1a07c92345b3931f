// Source files, locations and diagnostics of the .ptl front end.
//
// Every stage reports problems through one DiagnosticEngine instead of
// throwing, so that a bad program yields several clang-style messages
//   file:line:col: error: message
//   <the source line>
//       ^~~~
// and the front end never crashes, whatever the input.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace pypto::compiler {

// A half-open byte range [begin, end) inside one source file. file < 0: no location.
struct Span {
  int32_t file = -1;
  uint32_t begin = 0;
  uint32_t end = 0;

  bool valid() const { return file >= 0; }
  // The smallest span covering both (same file), else *this.
  Span to(const Span& other) const;
};

struct LineCol {
  int line = 0;  // 1-based
  int col = 0;   // 1-based, in bytes
};

class SourceFile {
 public:
  SourceFile(std::string path, std::string text);
  const std::string& path() const { return path_; }
  const std::string& text() const { return text_; }
  LineCol line_col(uint32_t offset) const;
  // The text of 1-based line `line`, without its line break.
  std::string_view line_text(int line) const;

 private:
  std::string path_;
  std::string text_;
  std::vector<uint32_t> line_starts_;
};

// Owns every file of one compilation; file ids index into it.
class SourceManager {
 public:
  int32_t add(std::string path, std::string text);
  const SourceFile& file(int32_t id) const { return *files_[static_cast<size_t>(id)]; }
  int32_t size() const { return static_cast<int32_t>(files_.size()); }

 private:
  std::vector<std::unique_ptr<SourceFile>> files_;
};

enum class Severity { kError, kNote };

struct Diagnostic {
  Severity severity = Severity::kError;
  Span span;
  std::string message;
};

// Collects diagnostics in report order. After kMaxErrors errors it stops
// recording (a fuzzed input can otherwise produce one error per byte) and
// adds a final "too many errors" line instead.
class DiagnosticEngine {
 public:
  static constexpr int kMaxErrors = 50;

  explicit DiagnosticEngine(const SourceManager& sources) : sources_(sources) {}

  void error(Span span, std::string message);
  // Attached to the error reported just before it (dropped if that error was).
  void note(Span span, std::string message);

  int error_count() const { return errors_; }
  bool has_errors() const { return errors_ > 0; }
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

  // Every diagnostic, formatted as the command prints it.
  std::string render() const;
  std::string render(const Diagnostic& d) const;

 private:
  const SourceManager& sources_;
  std::vector<Diagnostic> diagnostics_;
  int errors_ = 0;
  bool dropping_ = false;
};

}  // namespace pypto::compiler
