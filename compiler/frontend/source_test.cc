#include "compiler/frontend/source.h"

#include <gtest/gtest.h>

namespace pypto::compiler {
namespace {

TEST(SourceFileTest, LineAndColumn) {
  SourceFile f("a.ptl", "ab\ncd\n\nx");
  EXPECT_EQ(f.line_col(0).line, 1);
  EXPECT_EQ(f.line_col(0).col, 1);
  EXPECT_EQ(f.line_col(4).line, 2);
  EXPECT_EQ(f.line_col(4).col, 2);
  EXPECT_EQ(f.line_col(7).line, 4);
  EXPECT_EQ(f.line_col(7).col, 1);
  EXPECT_EQ(f.line_col(1000).line, 4);  // clamped, never out of range
  EXPECT_EQ(f.line_text(2), "cd");
  EXPECT_EQ(f.line_text(3), "");
  EXPECT_EQ(f.line_text(9), "");
}

TEST(DiagnosticEngineTest, RendersLikeClang) {
  SourceManager sm;
  const int32_t id = sm.add("p.ptl", "const A = 1\n  let bad = 2\n");
  DiagnosticEngine d(sm);
  d.error(Span{id, 18, 21}, "something is wrong");
  d.note(Span{id, 6, 7}, "see here");
  EXPECT_EQ(d.render(),
            "p.ptl:2:7: error: something is wrong\n"
            "  let bad = 2\n"
            "      ^~~\n"
            "p.ptl:1:7: note: see here\n"
            "const A = 1\n"
            "      ^\n");
  EXPECT_EQ(d.error_count(), 1);
}

TEST(DiagnosticEngineTest, TabsKeepTheCaretAligned) {
  SourceManager sm;
  const int32_t id = sm.add("p.ptl", "\tlet x = y\n");
  DiagnosticEngine d(sm);
  d.error(Span{id, 9, 10}, "m");
  EXPECT_EQ(d.render(), "p.ptl:1:10: error: m\n\tlet x = y\n\t        ^\n");
}

TEST(DiagnosticEngineTest, MultiLineSpanUnderlinesTheFirstLine) {
  SourceManager sm;
  const int32_t id = sm.add("p.ptl", "f(a,\n  b)\n");
  DiagnosticEngine d(sm);
  d.error(Span{id, 0, 9}, "m");
  EXPECT_EQ(d.render(), "p.ptl:1:1: error: m\nf(a,\n^~~~\n");
}

TEST(DiagnosticEngineTest, NoLocation) {
  SourceManager sm;
  DiagnosticEngine d(sm);
  d.error(Span{}, "cannot read 'x.ptl'");
  EXPECT_EQ(d.render(), "pypto-compile: error: cannot read 'x.ptl'\n");
}

TEST(DiagnosticEngineTest, StopsAfterTooManyErrors) {
  SourceManager sm;
  const int32_t id = sm.add("p.ptl", "x\n");
  DiagnosticEngine d(sm);
  for (int i = 0; i < 200; ++i) d.error(Span{id, 0, 1}, "e");
  d.note(Span{id, 0, 1}, "dropped with its error");
  EXPECT_EQ(d.diagnostics().size(), static_cast<size_t>(DiagnosticEngine::kMaxErrors) + 1);
  EXPECT_EQ(d.diagnostics().back().message, "too many errors emitted (50), stopping now");
  EXPECT_EQ(d.error_count(), 200);
}

}  // namespace
}  // namespace pypto::compiler
