#include "compiler/frontend/source.h"

#include <algorithm>

namespace pypto::compiler {

Span Span::to(const Span& other) const {
  if (!valid() || other.file != file) return *this;
  return Span{file, std::min(begin, other.begin), std::max(end, other.end)};
}

SourceFile::SourceFile(std::string path, std::string text)
    : path_(std::move(path)), text_(std::move(text)) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n') line_starts_.push_back(static_cast<uint32_t>(i + 1));
}

LineCol SourceFile::line_col(uint32_t offset) const {
  offset = std::min<uint32_t>(offset, static_cast<uint32_t>(text_.size()));
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  const size_t line = static_cast<size_t>(it - line_starts_.begin());  // >= 1
  return LineCol{static_cast<int>(line), static_cast<int>(offset - line_starts_[line - 1] + 1)};
}

std::string_view SourceFile::line_text(int line) const {
  if (line < 1 || static_cast<size_t>(line) > line_starts_.size()) return {};
  const size_t begin = line_starts_[static_cast<size_t>(line) - 1];
  size_t end = text_.find('\n', begin);
  if (end == std::string::npos) end = text_.size();
  if (end > begin && text_[end - 1] == '\r') --end;
  return std::string_view(text_).substr(begin, end - begin);
}

int32_t SourceManager::add(std::string path, std::string text) {
  files_.push_back(std::make_unique<SourceFile>(std::move(path), std::move(text)));
  return static_cast<int32_t>(files_.size() - 1);
}

void DiagnosticEngine::error(Span span, std::string message) {
  if (errors_ >= kMaxErrors) {
    if (!dropping_) {
      diagnostics_.push_back(
          {Severity::kError, Span{},
           "too many errors emitted (" + std::to_string(kMaxErrors) + "), stopping now"});
    }
    dropping_ = true;
    ++errors_;
    return;
  }
  ++errors_;
  dropping_ = false;
  diagnostics_.push_back({Severity::kError, span, std::move(message)});
}

void DiagnosticEngine::note(Span span, std::string message) {
  if (dropping_ || diagnostics_.empty()) return;
  diagnostics_.push_back({Severity::kNote, span, std::move(message)});
}

std::string DiagnosticEngine::render(const Diagnostic& d) const {
  const char* kind = d.severity == Severity::kError ? "error" : "note";
  if (!d.span.valid() || d.span.file >= sources_.size()) {
    return std::string("pypto-compile: ") + kind + ": " + d.message + "\n";
  }
  const SourceFile& f = sources_.file(d.span.file);
  const LineCol lc = f.line_col(d.span.begin);
  std::string out = f.path() + ":" + std::to_string(lc.line) + ":" + std::to_string(lc.col) + ": " +
                    kind + ": " + d.message + "\n";
  const std::string_view line = f.line_text(lc.line);
  out.append(line);
  out += "\n";
  // The caret line copies tabs from the source so the caret lines up in any tab width.
  const size_t col0 = std::min(static_cast<size_t>(lc.col - 1), line.size());
  for (size_t i = 0; i < col0; ++i) out += line[i] == '\t' ? '\t' : ' ';
  out += '^';
  // The span may cross lines; underline only up to the end of the first one.
  const size_t len = d.span.end > d.span.begin ? d.span.end - d.span.begin : 1;
  const size_t last = std::min(col0 + len, line.size());
  for (size_t i = col0 + 1; i < last; ++i) out += '~';
  out += "\n";
  return out;
}

std::string DiagnosticEngine::render() const {
  std::string out;
  for (const Diagnostic& d : diagnostics_) out += render(d);
  return out;
}

}  // namespace pypto::compiler
