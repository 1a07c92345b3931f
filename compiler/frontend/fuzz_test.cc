// Robustness: whatever the input — random bytes, random token soup, every
// truncation and many mutations of valid programs — the front end returns
// diagnostics. A crash, an assertion, a hang or an exception fails the test.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "compiler/test_util.h"

namespace pypto::compiler {
namespace {

std::string testdata(const std::string& name) { return testing::read_testdata(name); }

// Runs the whole front end; only diagnostics may come out. Then checks the
// partial tree the parser recovered even after syntax errors (the command does
// not, but the checker must cope with anything the parser can produce).
void survive(const std::string& text, int64_t world = 2) {
  try {
    auto run = testing::run_front_end({{"t.ptl", text}, {"lib/x.ptl", text}}, world);
    if (run.errors > 0) {
      ASSERT_FALSE(run.diagnostics.empty());
    }
    SourceManager sm;
    DiagnosticEngine d(sm);
    LoadOptions load;
    load.read = [&text](const std::string&) -> std::optional<std::string> { return text; };
    Program p = load_program("t.ptl", load, sm, d);
    CheckOptions o;
    o.world = world;
    check(p, o, d);
    if (d.error_count() > 0) {
      ASSERT_FALSE(d.render().empty());
    }
  } catch (const std::exception& e) {
    FAIL() << "exception '" << e.what() << "' on input:\n" << text;
  }
}

// PYPTO_FUZZ_SCALE=N runs N times as many random cases, with seeds shifted by N
// (a longer soak, e.g. under a sanitizer build); the default keeps ctest fast.
int scale() {
  const char* s = std::getenv("PYPTO_FUZZ_SCALE");
  const int n = s ? std::atoi(s) : 1;
  return n > 0 ? n : 1;
}

// The collectives library with a main that instantiates its generic functions.
std::string library_program() {
  return testing::read_library("collectives.ptl") +
         "\nhost main(x: inout f32[WORLD, 4, 16], z: inout f32[WORLD, 2 * WORLD, 16],\n"
         "          y: out f32[WORLD, 2 * WORLD, 16]) {\n"
         "  allreduce_sum(x)\n  allreduce_ring_max(z)\n  all_to_all(z, y)\n"
         "  broadcast(x, 1)\n  barrier()\n}\n";
}

const std::vector<std::string>& programs() {
  static const std::vector<std::string> p = {testdata("reduce.ptl"), testdata("softmax.ptl"),
                                             testdata("matmul_colshard.ptl"), library_program()};
  return p;
}

TEST(FuzzTest, RandomBytes) {
  std::mt19937 rng(12345 + scale());
  for (int i = 0; i < 2000 * scale(); ++i) {
    std::string s(rng() % 200, '\0');
    for (char& c : s) c = static_cast<char>(rng() % 256);
    survive(s);
  }
}

TEST(FuzzTest, RandomTokenSoup) {
  const std::vector<std::string> pieces = {"kernel",
                                           "aic",
                                           "aiv",
                                           "chip",
                                           "host",
                                           "const",
                                           "import",
                                           "let",
                                           "for",
                                           "in",
                                           "if",
                                           "else",
                                           "on",
                                           "step",
                                           "out",
                                           "inout",
                                           "window",
                                           "f32",
                                           "i32",
                                           "f16",
                                           "bool",
                                           "(",
                                           ")",
                                           "[",
                                           "]",
                                           "{",
                                           "}",
                                           ",",
                                           ":",
                                           ";",
                                           "..",
                                           "=",
                                           "==",
                                           "<",
                                           "+",
                                           "-",
                                           "*",
                                           "/",
                                           "%",
                                           "&&",
                                           "!",
                                           "\n",
                                           "0",
                                           "1",
                                           "16",
                                           "-1",
                                           "0.5",
                                           "9223372036854775807",
                                           "WORLD",
                                           "x",
                                           "y",
                                           "main",
                                           "load",
                                           "store",
                                           "add",
                                           "matmul",
                                           "notify",
                                           "wait",
                                           "view",
                                           "tensor",
                                           "window_buffer",
                                           "rank",
                                           "world",
                                           "zeros",
                                           "full",
                                           "row_max",
                                           "cast",
                                           "\"lib/x.ptl\"",
                                           "ge",
                                           "set"};
  std::mt19937 rng(777 + scale());
  for (int i = 0; i < 3000 * scale(); ++i) {
    std::string s;
    const int n = static_cast<int>(rng() % 80);
    for (int j = 0; j < n; ++j) s += pieces[rng() % pieces.size()] + " ";
    survive(s);
  }
}

TEST(FuzzTest, EveryTruncationOfValidPrograms) {
  for (const std::string& p : programs())
    for (size_t n = 0; n <= p.size(); ++n) survive(p.substr(0, n));
}

TEST(FuzzTest, MutationsOfValidPrograms) {
  std::mt19937 rng(4242 + scale());
  const std::string alphabet = "(){}[],:;.=<>+-*/%&|! \n0123456789abcxyzWORLD\"";
  for (const std::string& p : programs()) {
    for (int i = 0; i < 1500 * scale(); ++i) {
      std::string s = p;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits && !s.empty(); ++e) {
        const size_t at = rng() % s.size();
        switch (rng() % 3) {
          case 0:
            s[at] = alphabet[rng() % alphabet.size()];
            break;
          case 1:
            s.erase(at, 1 + rng() % 8);
            break;
          default:
            s.insert(at, 1, alphabet[rng() % alphabet.size()]);
            break;
        }
      }
      survive(s, 1 + static_cast<int64_t>(rng() % 8));
    }
  }
}

TEST(FuzzTest, PathologicalInputs) {
  survive(std::string(1 << 20, '('));
  survive(std::string(1 << 16, '{'));
  survive("chip main() {" + std::string(1 << 16, '}'));
  survive("const A = " + std::string(50000, '-') + "1");
  survive("const A = " + std::string(50000, '!') + "true");
  survive(
      "host main() { for a in 0 .. 100000 { for b in 0 .. 100000 { c() on a * b } } }\n"
      "chip c() {}");
  survive("const A = -9223372036854775807 - 1\nconst B = A / -1\nconst C = -A\nchip main() {}");
  survive("chip main(x: in f32[9223372036854775807, 9223372036854775807]) {}");
  survive(
      "kernel aiv k(x: in f32[9223372036854775807, 2]) {\n"
      "  let t = load(x, [9223372036854775807, 0], [9223372036854775807, 2]) }\n"
      "chip main() {}");
  survive("import \"t.ptl\"\nchip main() {}");
  survive(std::string("\0\0\0", 3));
}

}  // namespace
}  // namespace pypto::compiler
