#include "compiler/frontend/lexer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pypto::compiler {
namespace {

struct Lexed {
  std::vector<Token> tokens;
  std::string diagnostics;
};

Lexed lex_text(const std::string& text) {
  SourceManager sm;
  const int32_t id = sm.add("t.ptl", text);
  DiagnosticEngine d(sm);
  Lexed out;
  out.tokens = lex(sm.file(id), id, d);
  // Token texts point into the SourceManager's file; keep only what outlives it.
  for (Token& t : out.tokens) t.text = {};
  out.diagnostics = d.render();
  return out;
}

std::vector<Tok> kinds(const std::string& text) {
  std::vector<Tok> k;
  for (const Token& t : lex_text(text).tokens) k.push_back(t.kind);
  return k;
}

TEST(LexerTest, KeywordsIdentifiersAndPunctuation) {
  EXPECT_EQ(kinds("kernel aiv k(x: in f32[4]) { let a = b }"),
            (std::vector<Tok>{Tok::kKernel, Tok::kAiv, Tok::kIdent, Tok::kLParen, Tok::kIdent,
                              Tok::kColon, Tok::kIn, Tok::kDType, Tok::kLBracket, Tok::kInt,
                              Tok::kRBracket, Tok::kRParen, Tok::kLBrace, Tok::kLet, Tok::kIdent,
                              Tok::kAssign, Tok::kIdent, Tok::kRBrace, Tok::kEof}));
}

TEST(LexerTest, ContextualWordsStayIdentifiers) {
  // `out`, `inout`, `window`, `step` and `on` may name variables (the sketch has `out: out ...`).
  for (const char* w : {"out", "inout", "window", "step", "on"})
    EXPECT_EQ(kinds(w), (std::vector<Tok>{Tok::kIdent, Tok::kEof})) << w;
}

TEST(LexerTest, Operators) {
  EXPECT_EQ(
      kinds("== != < <= > >= + - * / % && || ! = .."),
      (std::vector<Tok>{Tok::kEq, Tok::kNe, Tok::kLt, Tok::kLe, Tok::kGt, Tok::kGe, Tok::kPlus,
                        Tok::kMinus, Tok::kStar, Tok::kSlash, Tok::kPercent, Tok::kAndAnd,
                        Tok::kOrOr, Tok::kBang, Tok::kAssign, Tok::kDotDot, Tok::kEof}));
}

TEST(LexerTest, RangeIsNotAFloat) {
  EXPECT_EQ(kinds("0..n"), (std::vector<Tok>{Tok::kInt, Tok::kDotDot, Tok::kIdent, Tok::kEof}));
}

TEST(LexerTest, Numbers) {
  const Lexed l = lex_text("42 0.5 1e3 2.5e-2 9223372036854775807");
  ASSERT_EQ(l.tokens.size(), 6u);
  EXPECT_EQ(l.tokens[0].int_value, 42);
  EXPECT_DOUBLE_EQ(l.tokens[1].float_value, 0.5);
  EXPECT_EQ(l.tokens[2].kind, Tok::kFloat);
  EXPECT_DOUBLE_EQ(l.tokens[2].float_value, 1000.0);
  EXPECT_DOUBLE_EQ(l.tokens[3].float_value, 0.025);
  EXPECT_EQ(l.tokens[4].int_value, INT64_MAX);
  EXPECT_EQ(l.diagnostics, "");
}

TEST(LexerTest, CommentsAndNewlines) {
  const Lexed l = lex_text("a // one\n/* two\n */ b /* c */ d");
  ASSERT_EQ(l.tokens.size(), 4u);
  EXPECT_TRUE(l.tokens[0].newline_before);   // start of file counts as a line start
  EXPECT_TRUE(l.tokens[1].newline_before);   // the line break inside the block comment
  EXPECT_FALSE(l.tokens[2].newline_before);  // same line as b
  EXPECT_EQ(l.diagnostics, "");
}

TEST(LexerTest, Strings) {
  const Lexed l = lex_text(R"(import "lib/a \"b\".ptl")");
  ASSERT_EQ(l.tokens.size(), 3u);
  EXPECT_EQ(l.tokens[1].kind, Tok::kString);
  EXPECT_EQ(l.tokens[1].string_value, "lib/a \"b\".ptl");
}

TEST(LexerTest, BadInputAlwaysEndsInEof) {
  const Lexed l = lex_text("@ # $ \"open");
  ASSERT_FALSE(l.tokens.empty());
  EXPECT_EQ(l.tokens.back().kind, Tok::kEof);
  EXPECT_EQ(l.diagnostics,
            "t.ptl:1:1: error: unexpected character '@'\n@ # $ \"open\n^\n"
            "t.ptl:1:3: error: unexpected character '#'\n@ # $ \"open\n  ^\n"
            "t.ptl:1:5: error: unexpected character '$'\n@ # $ \"open\n    ^\n"
            "t.ptl:1:7: error: unterminated string literal\n@ # $ \"open\n      ^\n");
}

TEST(LexerTest, TokNamesForMessages) {
  EXPECT_STREQ(tok_name(Tok::kLParen), "'('");
  EXPECT_STREQ(tok_name(Tok::kIdent), "identifier");
  EXPECT_STREQ(tok_name(Tok::kEof), "end of file");
}

}  // namespace
}  // namespace pypto::compiler
