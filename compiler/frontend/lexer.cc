#include "compiler/frontend/lexer.h"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <utility>

namespace pypto::compiler {

namespace {

constexpr std::pair<std::string_view, Tok> kKeywords[] = {
    {"const", Tok::kConst}, {"kernel", Tok::kKernel}, {"chip", Tok::kChip},
    {"host", Tok::kHost},   {"aic", Tok::kAic},       {"aiv", Tok::kAiv},
    {"let", Tok::kLet},     {"for", Tok::kFor},       {"in", Tok::kIn},
    {"if", Tok::kIf},       {"else", Tok::kElse},     {"import", Tok::kImport},
    {"true", Tok::kTrue},   {"false", Tok::kFalse},   {"f32", Tok::kDType},
    {"f16", Tok::kDType},   {"bf16", Tok::kDType},    {"i8", Tok::kDType},
    {"i16", Tok::kDType},   {"i32", Tok::kDType},     {"i64", Tok::kDType},
    {"u8", Tok::kDType},    {"bool", Tok::kDType},
};

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool digit(char c) { return c >= '0' && c <= '9'; }

class Lexer {
 public:
  Lexer(const SourceFile& file, int32_t file_id, DiagnosticEngine& diags)
      : text_(file.text()), file_(file_id), diags_(diags) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    bool newline = true;
    for (;;) {
      newline = skip_space_and_comments() || newline;
      Token t;
      t.newline_before = newline;
      if (pos_ >= text_.size()) {
        t.kind = Tok::kEof;
        t.span = span(pos_, pos_);
        out.push_back(std::move(t));
        return out;
      }
      const size_t start = pos_;
      if (!next(t)) continue;  // reported and skipped; keep the newline flag
      t.span = span(start, pos_);
      t.text = text_.substr(start, pos_ - start);
      out.push_back(std::move(t));
      newline = false;
    }
  }

 private:
  Span span(size_t b, size_t e) const {
    return Span{file_, static_cast<uint32_t>(b), static_cast<uint32_t>(e)};
  }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }

  // Returns true when a line break was skipped.
  bool skip_space_and_comments() {
    bool newline = false;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '\n') {
        newline = true;
        ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
        ++pos_;
      } else if (c == '/' && peek(1) == '/') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (c == '/' && peek(1) == '*') {
        const size_t start = pos_;
        const size_t close = text_.find("*/", pos_ + 2);
        const size_t end = close == std::string_view::npos ? text_.size() : close + 2;
        if (text_.substr(pos_, end - pos_).find('\n') != std::string_view::npos) newline = true;
        if (close == std::string_view::npos)
          diags_.error(span(start, start + 2), "unterminated '/*' comment");
        pos_ = end;
      } else {
        break;
      }
    }
    return newline;
  }

  // Lexes one token at pos_ into t; false when the bytes were bad (reported, skipped).
  bool next(Token& t) {
    const size_t start = pos_;
    const char c = text_[pos_];
    if (ident_start(c)) {
      while (pos_ < text_.size() && ident_char(text_[pos_])) ++pos_;
      const std::string_view word = text_.substr(start, pos_ - start);
      t.kind = Tok::kIdent;
      for (const auto& [name, kind] : kKeywords)
        if (word == name) t.kind = kind;
      return true;
    }
    if (digit(c)) return number(t);
    if (c == '"') return string(t);
    ++pos_;
    auto two = [&](char second, Tok yes, Tok no) {
      if (peek() == second) {
        ++pos_;
        t.kind = yes;
      } else {
        t.kind = no;
      }
      return true;
    };
    switch (c) {
      case '(':
        t.kind = Tok::kLParen;
        return true;
      case ')':
        t.kind = Tok::kRParen;
        return true;
      case '[':
        t.kind = Tok::kLBracket;
        return true;
      case ']':
        t.kind = Tok::kRBracket;
        return true;
      case '{':
        t.kind = Tok::kLBrace;
        return true;
      case '}':
        t.kind = Tok::kRBrace;
        return true;
      case ',':
        t.kind = Tok::kComma;
        return true;
      case ':':
        t.kind = Tok::kColon;
        return true;
      case ';':
        t.kind = Tok::kSemi;
        return true;
      case '+':
        t.kind = Tok::kPlus;
        return true;
      case '-':
        t.kind = Tok::kMinus;
        return true;
      case '*':
        t.kind = Tok::kStar;
        return true;
      case '/':
        t.kind = Tok::kSlash;
        return true;
      case '%':
        t.kind = Tok::kPercent;
        return true;
      case '=':
        return two('=', Tok::kEq, Tok::kAssign);
      case '!':
        return two('=', Tok::kNe, Tok::kBang);
      case '<':
        return two('=', Tok::kLe, Tok::kLt);
      case '>':
        return two('=', Tok::kGe, Tok::kGt);
      case '.':
        if (peek() == '.') {
          ++pos_;
          t.kind = Tok::kDotDot;
          return true;
        }
        diags_.error(span(start, pos_), "unexpected '.'; a range is written 'a .. b'");
        return false;
      case '&':
        if (peek() == '&') {
          ++pos_;
          t.kind = Tok::kAndAnd;
          return true;
        }
        diags_.error(span(start, pos_), "unexpected '&'; did you mean '&&'?");
        return false;
      case '|':
        if (peek() == '|') {
          ++pos_;
          t.kind = Tok::kOrOr;
          return true;
        }
        diags_.error(span(start, pos_), "unexpected '|'; did you mean '||'?");
        return false;
      default:
        break;
    }
    // Skip the rest of a multi-byte UTF-8 sequence so it is reported once.
    while (pos_ < text_.size() && (static_cast<unsigned char>(text_[pos_]) & 0xC0) == 0x80) ++pos_;
    const unsigned char u = static_cast<unsigned char>(c);
    std::string what;
    if (std::isprint(u)) {
      what = std::string("unexpected character '") + c + "'";
    } else {
      static const char* kHex = "0123456789abcdef";
      what = std::string("unexpected byte 0x") + kHex[u >> 4] + kHex[u & 15];
    }
    diags_.error(span(start, pos_), what);
    return false;
  }

  bool number(Token& t) {
    const size_t start = pos_;
    while (digit(peek())) ++pos_;
    bool is_float = false;
    // "0..n" is a range, not the float "0."; a float needs a digit after the point.
    if (peek() == '.' && digit(peek(1))) {
      is_float = true;
      ++pos_;
      while (digit(peek())) ++pos_;
    }
    if ((peek() == 'e' || peek() == 'E') &&
        (digit(peek(1)) || ((peek(1) == '+' || peek(1) == '-') && digit(peek(2))))) {
      is_float = true;
      pos_ += 2;
      while (digit(peek())) ++pos_;
    }
    const size_t end_of_number = pos_;
    // A letter glued to a number ("12abc") is one bad token, not two good ones.
    while (ident_char(peek())) ++pos_;
    if (pos_ != end_of_number) {
      diags_.error(span(start, pos_),
                   "invalid number '" + std::string(text_.substr(start, pos_ - start)) + "'");
      return false;
    }
    const std::string_view digits = text_.substr(start, pos_ - start);
    if (is_float) {
      t.kind = Tok::kFloat;
      const std::string copy(digits);
      t.float_value = std::strtod(copy.c_str(), nullptr);
      return true;
    }
    t.kind = Tok::kInt;
    const auto [ptr, ec] =
        std::from_chars(digits.data(), digits.data() + digits.size(), t.int_value);
    if (ec != std::errc() || ptr != digits.data() + digits.size()) {
      diags_.error(span(start, pos_),
                   "integer literal '" + std::string(digits) + "' does not fit in 64 bits");
      t.int_value = 0;  // keep the token so the parser does not cascade
    }
    return true;
  }

  bool string(Token& t) {
    const size_t start = pos_++;
    std::string value;
    while (pos_ < text_.size() && text_[pos_] != '"' && text_[pos_] != '\n') {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size() &&
          (text_[pos_ + 1] == '"' || text_[pos_ + 1] == '\\')) {
        ++pos_;
      }
      value += text_[pos_++];
    }
    if (pos_ >= text_.size() || text_[pos_] != '"') {
      diags_.error(span(start, start + 1), "unterminated string literal");
      return false;
    }
    ++pos_;
    t.kind = Tok::kString;
    t.string_value = std::move(value);
    return true;
  }

  std::string_view text_;
  int32_t file_;
  DiagnosticEngine& diags_;
  size_t pos_ = 0;
};

}  // namespace

const char* tok_name(Tok kind) {
  switch (kind) {
    case Tok::kEof:
      return "end of file";
    case Tok::kIdent:
      return "identifier";
    case Tok::kInt:
      return "integer";
    case Tok::kFloat:
      return "number";
    case Tok::kString:
      return "string";
    case Tok::kConst:
      return "'const'";
    case Tok::kKernel:
      return "'kernel'";
    case Tok::kChip:
      return "'chip'";
    case Tok::kHost:
      return "'host'";
    case Tok::kAic:
      return "'aic'";
    case Tok::kAiv:
      return "'aiv'";
    case Tok::kLet:
      return "'let'";
    case Tok::kFor:
      return "'for'";
    case Tok::kIn:
      return "'in'";
    case Tok::kIf:
      return "'if'";
    case Tok::kElse:
      return "'else'";
    case Tok::kImport:
      return "'import'";
    case Tok::kTrue:
      return "'true'";
    case Tok::kFalse:
      return "'false'";
    case Tok::kDType:
      return "dtype";
    case Tok::kLParen:
      return "'('";
    case Tok::kRParen:
      return "')'";
    case Tok::kLBracket:
      return "'['";
    case Tok::kRBracket:
      return "']'";
    case Tok::kLBrace:
      return "'{'";
    case Tok::kRBrace:
      return "'}'";
    case Tok::kComma:
      return "','";
    case Tok::kColon:
      return "':'";
    case Tok::kSemi:
      return "';'";
    case Tok::kDotDot:
      return "'..'";
    case Tok::kAssign:
      return "'='";
    case Tok::kEq:
      return "'=='";
    case Tok::kNe:
      return "'!='";
    case Tok::kLt:
      return "'<'";
    case Tok::kLe:
      return "'<='";
    case Tok::kGt:
      return "'>'";
    case Tok::kGe:
      return "'>='";
    case Tok::kPlus:
      return "'+'";
    case Tok::kMinus:
      return "'-'";
    case Tok::kStar:
      return "'*'";
    case Tok::kSlash:
      return "'/'";
    case Tok::kPercent:
      return "'%'";
    case Tok::kAndAnd:
      return "'&&'";
    case Tok::kOrOr:
      return "'||'";
    case Tok::kBang:
      return "'!'";
  }
  return "token";
}

std::vector<Token> lex(const SourceFile& file, int32_t file_id, DiagnosticEngine& diags) {
  return Lexer(file, file_id, diags).run();
}

}  // namespace pypto::compiler
