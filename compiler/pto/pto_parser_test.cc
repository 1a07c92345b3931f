// The .pto parser: round trips (print(parse(text)) == text), diagnostics with
// file:line:col and a caret, and robustness against any input (fuzz).
#include <gtest/gtest.h>

#include <random>

#include "compiler/pto/pto_emit_cpp.h"
#include "compiler/pto/pto_printer.h"
#include "compiler/pto/pto_test_util.h"

namespace pypto::compiler {
namespace {

using testing::parse_pto;

const char* kListing =
    ".kernel k aiv\n"
    ".tensor x in f32[4, 8, 16]\n"
    ".tensor y inout i32[2, 16]\n"
    ".window data f32[1, 256]\n"
    ".window signal i32[8, 1]\n"
    ".scalar alpha f32\n"
    ".scalar n i32\n"
    "  %me:i64 = rank\n"
    "  %w:i64 = world\n"
    "  %i:i64 = rem %me, 4\n"
    "  %f:f32 = itof %i\n"
    "  %f:f32 = mul %f, alpha\n"
    "  %c:bool = gt n, 2\n"
    "  %d:bool = not %c\n"
    "  %c:bool = and %c, %d\n"
    "  %t:f32[2, 16] = tload x[%i, 0, 0]\n"
    "  %m:f32[2, 1] = trow_max %t\n"
    "  %t:f32[2, 16] = tsub %t, %m\n"
    "  %t:f32[2, 16] = texp %t\n"
    "  %u:f32[2, 16] = tmul %t, 0.0015\n"
    "  %u:f32[2, 16] = tmax %u, -2.0\n"
    "  %v:i32[2, 16] = tcvt %u\n"
    "  %v:i32[2, 16] = tadd %v, n\n"
    "  tstore %v, y[0, 0]\n"
    "  %z:f32[1, 256] = tfull 0.0\n"
    "  for %p = 0 to %w step 1\n"
    "    if %c\n"
    "      notify signal[%me, 0], %p, 1, add\n"
    "    else\n"
    "      wait signal[%p, 0], ge, 1\n"
    "    end\n"
    "    %r:f32[1, 256] = tremote_load data[0, 0], %p\n"
    "    %z:f32[1, 256] = tadd %z, %r\n"
    "    tremote_store %z, data[0, 0], %p, set\n"
    "    put data, data[0, 0], %p\n"
    "    get data, data[0, 0], %p\n"
    "  end\n"
    ".end\n";

TEST(PtoParserTest, RoundTrip) {
  std::string diags;
  auto unit = parse_pto(kListing, &diags);
  ASSERT_TRUE(unit) << diags;
  EXPECT_EQ(pto::print(*unit), kListing);
  auto again = parse_pto(pto::print(*unit), &diags);
  ASSERT_TRUE(again) << diags;
  EXPECT_EQ(pto::print(*again), kListing);
}

// .source and .loc carry the program file and line each instruction came from
// through edits of the listing, so runtime errors can name the .ptl line.
TEST(PtoParserTest, SourceAndLocRoundTripAndMarkTheInstructionsAfterThem) {
  const char* listing =
      ".kernel k aiv\n"
      ".source \"/src/my prog.ptl\"\n"
      ".window s i32[2, 1]\n"
      "  .loc 7\n"
      "  %me:i64 = rank\n"
      "  for %p = 0 to 2 step 1\n"
      "    .loc 9\n"
      "    wait s[%p, 0], ge, 1\n"
      "  end\n"
      ".end\n";
  std::string diags;
  auto unit = parse_pto(listing, &diags);
  ASSERT_TRUE(unit) << diags;
  EXPECT_EQ(unit->source, "/src/my prog.ptl");
  EXPECT_EQ(unit->body[0].source_line, 7);
  EXPECT_EQ(unit->body[1].source_line, 7);
  EXPECT_EQ(unit->body[1].body[0].source_line, 9);
  EXPECT_EQ(pto::print(*unit), listing);
}

TEST(PtoParserTest, CommentsAndSpacingAreFree) {
  std::string diags;
  auto unit = parse_pto(
      "# a comment\n\n.kernel  mm   aic   # trailing\n.tensor a in f32[2,2]\n"
      ".tensor c out f32[2,2]\n%x:f32[2,2]=tload a[0,0]\n  %y:f32[2, 2] = tmatmul %x,%x\n"
      "tstore %y,c[0,0]\n.end\n# after\n",
      &diags);
  ASSERT_TRUE(unit) << diags;
  EXPECT_EQ(pto::print(*unit),
            ".kernel mm aic\n.tensor a in f32[2, 2]\n.tensor c out f32[2, 2]\n"
            "  %x:f32[2, 2] = tload a[0, 0]\n  %y:f32[2, 2] = tmatmul %x, %x\n"
            "  tstore %y, c[0, 0]\n.end\n");
}

TEST(PtoParserTest, FloatsRoundTripExactly) {
  for (double v : {0.1, 1.0 / 3.0, 1e-30, -2.5, 3.0e20, 0.0}) {
    const std::string text = ".kernel k aiv\n  %f:f32 = mov " + pto::format_float(v) + "\n.end\n";
    std::string diags;
    auto unit = parse_pto(text, &diags);
    ASSERT_TRUE(unit) << diags;
    EXPECT_EQ(unit->body[0].args[0].float_value, v);
    EXPECT_EQ(pto::print(*unit), text);
  }
}

struct BadCase {
  const char* text;
  const char* diagnostic;  // the first diagnostic, rendered
};

TEST(PtoParserTest, Diagnostics) {
  const BadCase cases[] = {
      {"", "t.pto:1:1: error: empty listing: expected '.kernel <name> aiv|aic'\n"},
      {"  %a:i64 = rank\n",
       "t.pto:1:3: error: expected '.kernel <name> aiv|aic' before any instruction\n"
       "  %a:i64 = rank\n  ^~\n"},
      {".kernel k gpu\n",
       "t.pto:1:11: error: unknown core type 'gpu'; expected 'aiv' or 'aic'\n.kernel k gpu\n"
       "          ^~~\n"},
      {".kernel k aiv\n  %a:i64 = rank\n",
       "t.pto:2:16: error: the listing ends without '.end'\n"},
      {".kernel k aiv\n  %a:i64 = add %b, 1\n.end\n",
       "t.pto:2:16: error: register '%b' is used before it is defined\n  %a:i64 = add %b, 1\n"
       "               ^~\n"},
      {".kernel k aiv\n  %a:i64 = frob 1\n.end\n",
       "t.pto:2:12: error: unknown instruction 'frob'\n  %a:i64 = frob 1\n           ^~~~\n"},
      {".kernel k aiv\n.tensor x in f32[4, 4]\n  %t:f32[4, 4] = tload x[0, 1]\n.end\n",
       "t.pto:3:29: error: offset 1 puts the region outside 'x' (dimension 1 has 4, the tile "
       "needs 4)\n  %t:f32[4, 4] = tload x[0, 1]\n                            ^\n"},
      {".kernel k aiv\n.tensor x out f32[4]\n  %t:f32[1, 4] = tload x[0]\n.end\n",
       "t.pto:3:24: error: cannot load from 'out' tensor 'x'\n  %t:f32[1, 4] = tload x[0]\n"
       "                       ^~~~\n"},
      {".kernel k aiv\n  %a:i64 = rank\n  %a:f32 = mov 1.0\n.end\n",
       "t.pto:3:3: error: register '%a' is i64, not f32; a register keeps the type of its first "
       "definition\n  %a:f32 = mov 1.0\n  ^~\n"},
      {".kernel k aiv\n  for %i = 0 to 4 step 1\n.end\n",
       "t.pto:3:1: error: '.end' inside an open 'for' block; close it with 'end' first\n"},
      {".kernel k aiv\n  end\n.end\n",
       "t.pto:2:3: error: 'end' without an open 'for' or 'if'\n  end\n  ^~~\n"},
      {".kernel k aiv\n  %a:bool[2, 2] = tfull 0\n.end\n",
       "t.pto:2:6: error: bool tiles are not supported yet; use f32, f16, bf16, i8, i16, i32, "
       "i64 or u8\n"},
      {".kernel k aiv\n  %a:i32[2, 2] = tfull 0\n  %b:i32[2, 2] = texp %a\n.end\n",
       "t.pto:3:18: error: 'texp' needs an f32, f16 or bf16 tile\n"},
      {".kernel k aiv\n  %a:i64 = mov 99999999999999999999\n.end\n",
       "t.pto:2:16: error: integer '99999999999999999999' does not fit in 64 bits\n"},
      {".kernel k aiv\n.window s f32[2, 1]\n  wait s[0, 0], ge, 1\n.end\n",
       "t.pto:3:8: error: signal cells live in i32 windows; 's' holds f32\n"},
      {".kernel k aiv\n.window s i32[2, 1]\n  wait s[0, 0], gte, 1\n.end\n",
       "t.pto:3:17: error: the comparison must be one of eq, ne, gt, ge, lt, le\n"},
      {".kernel k aiv\n  %a:i64 = mov 1 @\n.end\n",
       "t.pto:2:18: error: unexpected character '@'\n"},
      {".source \"a.ptl\"\n",
       "t.pto:1:1: error: '.source' before '.kernel'\n"},
      {".kernel k aiv\n  %a:i64 = rank\n.source \"a.ptl\"\n.end\n",
       "t.pto:3:1: error: '.source' must come before the first instruction\n"},
      {".kernel k aiv\n.source a.ptl\n.end\n",
       "t.pto:2:1: error: expected the program source's path in quotes after '.source'\n"},
      {".kernel k aiv\n.source \"a.ptl\n.end\n",
       "t.pto:2:9: error: unterminated string: expected a closing '\"' on this line\n"},
      {".kernel k aiv\n  .loc 0\n.end\n",
       "t.pto:2:3: error: expected a line number (1 or more) after '.loc'\n"},
      {".kernel k aiv\n  .loc 3 4\n.end\n", "t.pto:2:10: error: "},
      {".kernel k aiv\n.end\n.kernel j aiv\n",
       "t.pto:3:1: error: text after '.end'; a .pto file holds one kernel unit\n"},
  };
  for (const BadCase& c : cases) {
    std::string diags;
    auto unit = parse_pto(c.text, &diags);
    EXPECT_FALSE(unit) << c.text;
    EXPECT_EQ(diags.substr(0, std::string(c.diagnostic).size()), c.diagnostic) << c.text;
  }
}

TEST(PtoParserTest, SeveralErrorsAreReported) {
  std::string diags;
  auto unit = parse_pto(".kernel k aiv\n  %a:i64 = frob\n  %b:i64 = add %x, 1\n.end\n", &diags);
  EXPECT_FALSE(unit);
  EXPECT_NE(diags.find("t.pto:2:"), std::string::npos) << diags;
  EXPECT_NE(diags.find("t.pto:3:"), std::string::npos) << diags;
}

// Random bytes, every truncation and many mutations of a valid listing: the
// parser only ever answers with a unit or diagnostics.
TEST(PtoParserTest, Fuzz) {
  std::mt19937 rng(1234);
  auto survive = [](const std::string& text) {
    try {
      std::string diags;
      auto unit = parse_pto(text, &diags);
      if (!unit) {
        ASSERT_FALSE(diags.empty()) << text;
      } else {
        // A unit that parsed prints and re-parses to the same listing.
        const std::string printed = pto::print(*unit);
        auto again = parse_pto(printed, &diags);
        ASSERT_TRUE(again) << diags << printed;
        ASSERT_EQ(pto::print(*again), printed);
        ASSERT_FALSE(pto::emit_cpp(*unit).empty());
      }
    } catch (const std::exception& e) {
      FAIL() << "exception " << e.what() << " on:\n" << text;
    }
  };
  const std::string base = kListing;
  for (size_t n = 0; n <= base.size(); ++n) survive(base.substr(0, n));
  const std::string alphabet = "%:=,[]#.-+0123456789eaxyz \n\t\x01\xff";
  const char* words[] = {"tload", "for", "end", "else", "if", ".end", ".kernel", "%t", "f32[2, 16]",
                         "i64", "bool", "x[", "]", ",", "=", "step", "to", "\n", "-1", "1e999"};
  for (int i = 0; i < 3000; ++i) {
    std::string s = base;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < edits; ++k) {
      const size_t pos = rng() % (s.size() + 1);
      switch (rng() % 4) {
        case 0:
          if (!s.empty()) s.erase(pos % s.size(), 1 + rng() % 8);
          break;
        case 1:
          s.insert(pos, 1, alphabet[rng() % alphabet.size()]);
          break;
        case 2:
          s.insert(pos, words[rng() % (sizeof words / sizeof *words)]);
          break;
        default:
          if (!s.empty()) s[pos % s.size()] = static_cast<char>(rng() % 256);
          break;
      }
    }
    survive(s);
  }
  for (int i = 0; i < 300; ++i) {
    std::string s(rng() % 200, '\0');
    for (char& c : s) c = static_cast<char>(rng() % 256);
    survive(s);
    survive(".kernel k aiv\n" + s);
  }
}

}  // namespace
}  // namespace pypto::compiler
