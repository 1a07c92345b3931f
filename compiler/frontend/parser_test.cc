#include "compiler/frontend/parser.h"

#include <gtest/gtest.h>

#include <string>

namespace pypto::compiler {
namespace {

struct Parsed {
  std::string tree;
  std::string diagnostics;
};

Parsed parse_text(const std::string& text) {
  SourceManager sm;
  const int32_t id = sm.add("t.ptl", text);
  DiagnosticEngine d(sm);
  const Module m = parse_file(sm, id, d);
  return Parsed{dump(m), d.render()};
}

// The dump of the only statement of `chip f() { <stmt> }`.
std::string stmt(const std::string& text) {
  const Parsed p = parse_text("chip f() { " + text + " }");
  EXPECT_EQ(p.diagnostics, "") << text;
  const std::string prefix = "(chip f () {";
  const size_t b = p.tree.find(prefix);
  if (b == std::string::npos) return p.tree;
  return p.tree.substr(b + prefix.size(), p.tree.size() - b - prefix.size() - 3);
}

TEST(ParserTest, Precedence) {
  EXPECT_EQ(stmt("let a = 1 + 2 * 3 - 4"), "(let a (- (+ 1 (* 2 3)) 4))");
  EXPECT_EQ(stmt("let a = (1 + 2) * 3"), "(let a (* (+ 1 2) 3))");
  EXPECT_EQ(stmt("let a = -x % 4"), "(let a (% (- x) 4))");
  EXPECT_EQ(stmt("let a = a < b && c != d || !e"), "(let a (|| (&& (< a b) (!= c d)) (! e)))");
}

TEST(ParserTest, CallsIndexListsAndTypes) {
  EXPECT_EQ(stmt("let t = load(x[r], [0, i * 16], [16, 64])"),
            "(let t (call load (index x r) (list 0 (* i 16)) (list 16 64)))");
  EXPECT_EQ(stmt("let z = zeros(f32[16, SIZE])"), "(let z (call zeros (type f32 16 SIZE)))");
  EXPECT_EQ(stmt("let c = cast(t, bf16)"), "(let c (call cast t bf16))");
  EXPECT_EQ(stmt("f(a, b,)"), "(call f a b)");
}

TEST(ParserTest, Statements) {
  EXPECT_EQ(stmt("for i in 0 .. n step 64 { acc = add(acc, i) }"),
            "(for i 0 n step 64 {(= acc (call add acc i))})");
  EXPECT_EQ(stmt("if a { f() } else if b { g() } else { h() }"),
            "(if a {(call f)} else {(if b {(call g)} else {(call h)})})");
  EXPECT_EQ(stmt("c(x[r]) on r"), "(call c (index x r)) on r");
  EXPECT_EQ(stmt("const T = 64"), "(const T 64)");
}

TEST(ParserTest, SemicolonsAndLineBreaksSeparateStatements) {
  EXPECT_EQ(stmt("let a = 1; let b = 2\nlet c = 3;;"), "(let a 1) (let b 2) (let c 3)");
  // A binary operator continues the expression across a line break.
  EXPECT_EQ(stmt("let a = 1 +\n 2"), "(let a (+ 1 2))");
  // `[` on a new line does not index the previous line's expression.
  const Parsed p = parse_text("chip f() { let a = b\n[1] }");
  EXPECT_NE(p.diagnostics, "");
}

TEST(ParserTest, Declarations) {
  const Parsed p = parse_text(
      "import \"lib/coll.ptl\"\n"
      "const N = 4\n"
      "kernel aic k(a: in f16[N, 8], c: inout f32[N, N], w: window i32[WORLD, 1], s: f32) {}\n"
      "chip c() {}\n"
      "host main(x: out f32[4]) {}\n");
  EXPECT_EQ(p.diagnostics, "");
  EXPECT_EQ(p.tree,
            "(import \"lib/coll.ptl\")\n"
            "(const N 4)\n"
            "(kernel aic k (a:in f16[N 8] c:inout f32[N N] w:window i32[WORLD 1] s:f32) {})\n"
            "(chip c () {})\n"
            "(host main (x:out f32[4]) {})\n");
}

TEST(ParserTest, RecoversAndReportsSeveralErrors) {
  const Parsed p = parse_text(
      "chip f() {\n"
      "  let = 1\n"
      "  let ok = 2\n"
      "  for in 0 .. 4 { }\n"
      "}\n"
      "kernel vec k() {}\n"
      "chip g() { let fine = 1 }\n");
  EXPECT_EQ(p.diagnostics,
            "t.ptl:2:7: error: expected a name after 'let', found '='\n"
            "  let = 1\n"
            "      ^\n"
            "t.ptl:4:7: error: expected the loop variable after 'for', found 'in'\n"
            "  for in 0 .. 4 { }\n"
            "      ^~\n"
            "t.ptl:6:8: error: expected the core type 'aic' (cube) or 'aiv' (vector) after "
            "'kernel', found 'vec'\n"
            "kernel vec k() {}\n"
            "       ^~~\n");
  // The good parts survive.
  EXPECT_NE(p.tree.find("(let ok 2)"), std::string::npos);
  EXPECT_NE(p.tree.find("(chip g () {(let fine 1)})"), std::string::npos);
}

TEST(ParserTest, DeepNestingIsReportedNotRecursed) {
  const std::string deep = std::string(100000, '(') + "1" + std::string(100000, ')');
  const Parsed p = parse_text("const A = " + deep + "\nchip main() {}\n");
  EXPECT_NE(p.diagnostics.find("nesting is too deep"), std::string::npos);
  std::string blocks = "chip main() { ";
  for (int i = 0; i < 5000; ++i) blocks += "if true { ";
  for (int i = 0; i < 5000; ++i) blocks += "} ";
  const Parsed q = parse_text(blocks + "}\nchip after() {}\n");
  EXPECT_NE(q.diagnostics.find("nesting is too deep"), std::string::npos);
  EXPECT_NE(q.tree.find("(chip after () {})"), std::string::npos);
}

}  // namespace
}  // namespace pypto::compiler
