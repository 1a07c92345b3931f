// The .ptl lexer: bytes -> tokens. Line breaks are not tokens; each token
// records whether a line break precedes it, which is all the parser needs to
// let a line break end a statement.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/frontend/source.h"

namespace pypto::compiler {

enum class Tok {
  kEof,
  kIdent,
  kInt,
  kFloat,
  kString,
  // keywords; out, inout, window, step and on are contextual (they stay identifiers, so
  // `out` can name a parameter, as examples/allreduce.ptl's reduce_step does)
  kConst,
  kKernel,
  kChip,
  kHost,
  kAic,
  kAiv,
  kLet,
  kFor,
  kIn,
  kIf,
  kElse,
  kImport,
  kTrue,
  kFalse,
  kDType,  // f32 f16 bf16 i8 i16 i32 i64 u8 bool
  // punctuation
  kLParen,
  kRParen,
  kLBracket,
  kRBracket,
  kLBrace,
  kRBrace,
  kComma,
  kColon,
  kSemi,
  kDotDot,
  kAssign,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kPlus,
  kMinus,
  kStar,
  kSlash,
  kPercent,
  kAndAnd,
  kOrOr,
  kBang,
};

// How a token kind reads in messages: "'('", "identifier", "end of file".
const char* tok_name(Tok kind);

struct Token {
  Tok kind = Tok::kEof;
  Span span;
  std::string_view text;  // a view into the SourceFile's text
  bool newline_before = false;
  int64_t int_value = 0;     // kInt
  double float_value = 0.0;  // kFloat
  std::string string_value;  // kString, escapes resolved
};

// Lexes a whole file. Bad characters, unterminated strings or comments and
// out-of-range numbers are reported and skipped; the result always ends with kEof.
std::vector<Token> lex(const SourceFile& file, int32_t file_id, DiagnosticEngine& diags);

}  // namespace pypto::compiler
