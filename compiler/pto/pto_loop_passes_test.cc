// The loop passes: what they rewrite (as the listing prints it), what they
// leave alone, and that copies share their original's tile buffer.
#include "compiler/pto/pto_loop_passes.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "compiler/pto/pto_printer.h"
#include "compiler/pto/pto_test_util.h"

namespace pypto::compiler {
namespace {

using testing::parse_pto;

const char* kHeader =
    ".kernel u aiv\n"
    ".tensor x in f32[8, 16]\n"
    ".tensor y out f32[8, 16]\n"
    ".scalar op i64\n"
    ".scalar n i64\n";

pto::Unit parse(const std::string& body) {
  std::string diags;
  std::optional<pto::Unit> unit = parse_pto(kHeader + body + ".end\n", &diags);
  if (!unit) throw std::runtime_error(diags);
  return *unit;
}
// The listing's instructions, without the header.
std::string body_of(const pto::Unit& unit) {
  std::string text = pto::print(unit);
  const size_t begin = text.find("\n  ");
  const size_t end = text.rfind(".end");
  return text.substr(begin + 1, end - begin - 1);
}

// `pass` rewrites none of `bodies`.
void expect_left_alone(std::initializer_list<std::string> bodies, int (*pass)(pto::Unit&)) {
  for (const std::string& body : bodies) {
    pto::Unit unit = parse(body);
    const std::string before = body_of(unit);
    EXPECT_EQ(pass(unit), 0) << body;
    EXPECT_EQ(body_of(unit), before);
  }
}

TEST(PtoLoopPassesTest, UnswitchesAnInvariantCondition) {
  pto::Unit unit = parse(
      "  for %i = 0 to n step 2\n"
      "    %c:bool = eq op, 0\n"
      "    %t:f32[2, 16] = tload x[%i, 0]\n"
      "    if %c\n"
      "      %t:f32[2, 16] = tadd %t, 1.0\n"
      "    else\n"
      "      %t:f32[2, 16] = tmul %t, 2.0\n"
      "    end\n"
      "    tstore %t, y[%i, 0]\n"
      "  end\n");
  EXPECT_EQ(pto::unswitch_loops(unit), 1);
  // The else copy has registers of its own, sharing the originals' buffers.
  EXPECT_EQ(body_of(unit),
            "  %c:bool = eq op, 0\n"
            "  if %c\n"
            "    for %i = 0 to n step 2\n"
            "      %t:f32[2, 16] = tload x[%i, 0]\n"
            "      %t:f32[2, 16] = tadd %t, 1.0\n"
            "      tstore %t, y[%i, 0]\n"
            "    end\n"
            "  else\n"
            "    for %i_u1 = 0 to n step 2\n"
            "      %t_u1:f32[2, 16] = tload x[%i_u1, 0]\n"
            "      %t_u1:f32[2, 16] = tmul %t_u1, 2.0\n"
            "      tstore %t_u1, y[%i_u1, 0]\n"
            "    end\n"
            "  end\n");
  EXPECT_EQ(unit.regs[static_cast<size_t>(unit.find_reg("t_u1"))].shares, unit.find_reg("t"));
}

TEST(PtoLoopPassesTest, LeavesConditionsTheLoopChanges) {
  const std::string varying =  // depends on the loop variable
      "  for %i = 0 to n step 2\n"
      "    %c:bool = eq %i, 0\n"
      "    if %c\n"
      "      %t:f32[2, 16] = tload x[%i, 0]\n"
      "      tstore %t, y[%i, 0]\n"
      "    end\n"
      "  end\n";
  const std::string reread =  // read after the loop too
      "  for %i = 0 to n step 2\n"
      "    %c:bool = eq op, 0\n"
      "    if %c\n"
      "      %t:f32[2, 16] = tload x[%i, 0]\n"
      "      tstore %t, y[%i, 0]\n"
      "    end\n"
      "  end\n"
      "  %d:bool = not %c\n";
  const std::string failing =  // a division that can fail stays where it is
      "  for %i = 0 to n step 2\n"
      "    %q:i64 = div op, n\n"
      "    %c:bool = eq %q, 0\n"
      "    if %c\n"
      "      %t:f32[2, 16] = tload x[%i, 0]\n"
      "      tstore %t, y[%i, 0]\n"
      "    end\n"
      "  end\n";
  expect_left_alone({varying, reread, failing}, pto::unswitch_loops);
}

TEST(PtoLoopPassesTest, UnrollsShortConstantLoops) {
  pto::Unit unit = parse(
      "  %acc:f32[2, 16] = tload x[0, 0]\n"
      "  for %k = 1 to 4 step 2\n"
      "    %r:i64 = mul %k, 2\n"
      "    %t:f32[2, 16] = tload x[%r, 0]\n"
      "    %acc:f32[2, 16] = tadd %acc, %t\n"
      "  end\n"
      "  for %k_1 = 3 to 3 step 1\n"
      "    tstore %acc, y[%k_1, 0]\n"
      "  end\n"
      "  tstore %acc, y[0, 0]\n");
  EXPECT_EQ(pto::unroll_loops(unit), 2);
  // Trip 1 renames what each trip defines afresh (%r, %t); the accumulator,
  // carried from trip to trip, keeps its register. The loop of no trips is gone.
  EXPECT_EQ(body_of(unit),
            "  %acc:f32[2, 16] = tload x[0, 0]\n"
            "  %r:i64 = mul 1, 2\n"
            "  %t:f32[2, 16] = tload x[%r, 0]\n"
            "  %acc:f32[2, 16] = tadd %acc, %t\n"
            "  %r_u1:i64 = mul 3, 2\n"
            "  %t_u1:f32[2, 16] = tload x[%r_u1, 0]\n"
            "  %acc:f32[2, 16] = tadd %acc, %t_u1\n"
            "  tstore %acc, y[0, 0]\n");
}

TEST(PtoLoopPassesTest, LeavesLoopsItCannotUnroll) {
  const std::string many =  // 17 trips
      "  for %k = 0 to 17 step 1\n"
      "    %t:f32[2, 16] = tload x[0, 0]\n"
      "    tstore %t, y[0, 0]\n"
      "  end\n";
  const std::string nested =
      "  for %k = 0 to 2 step 1\n"
      "    for %j = 0 to n step 1\n"
      "      %t:f32[2, 16] = tload x[%j, 0]\n"
      "      tstore %t, y[%k, 0]\n"
      "    end\n"
      "  end\n";
  const std::string runtime_bound =
      "  for %k = 0 to n step 1\n"
      "    %t:f32[2, 16] = tload x[%k, 0]\n"
      "    tstore %t, y[%k, 0]\n"
      "  end\n";
  expect_left_alone({many, nested, runtime_bound}, pto::unroll_loops);
}

}  // namespace
}  // namespace pypto::compiler
