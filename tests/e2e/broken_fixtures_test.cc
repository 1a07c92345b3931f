// The broken fixtures of tests/fixtures/l2_broken/: the exact outcome of run
// and exec on each, with the exit code and what the message must name.
#include <fstream>

#include "tests/e2e/e2e_util.h"

namespace pypto::e2e {
namespace {

struct BrokenCase {
  const char* name;
  int exit_code;
  const char* marker;
  std::vector<std::string> message_parts;
};

const BrokenCase kCases[] = {
    {"compile_error", 1, "FAIL",
     {"kernel source kernels/aiv/vadd.cpp does not compile", "compiler diagnostics:",
      "kernels/aiv/vadd.cpp:15:", "error: expected"}},
    {"runtime_error", 1, "FAIL",
     {"program 'vector_add': kernel 'vadd' (func_id 0) failed in task 0",
      "vadd: injected failure: tile overflow at element 17"}},
    {"crash", 1, "FAIL", {"kernel 'vadd' (func_id 0) failed in task 0", "SIGSEGV"}},
    {"truncated_sidecar", 3, "INFRA",
     {"truncated_sidecar/kernel_config.json: is not valid JSON", "restore the file"}},
    {"missing_kernel", 3, "INFRA",
     {"missing_kernel/kernel_config.json: field 'kernels[0].source'",
      "names 'kernels/aiv/vadd.cpp', which does not exist"}},
};

void PrintTo(const BrokenCase& c, std::ostream* os) { *os << c.name; }

class BrokenFixtureTest : public ::testing::TestWithParam<BrokenCase> {};

TEST_P(BrokenFixtureTest, RunAndExecReportIt) {
  const BrokenCase& c = GetParam();
  fs::path dir = copy_fixture(std::string("l2_broken/") + c.name, std::string("broken_") + c.name);

  CoordResult r = coord({"run", dir.string(), "--validate"});
  EXPECT_EQ(r.exit_code, c.exit_code) << r.all();
  for (const std::string& part : c.message_parts)
    EXPECT_TRUE(contains(r.err, part)) << "missing '" << part << "'\n" << r.all();
  EXPECT_TRUE(contains(r.err, "pypto-coord: error: ")) << r.all();
  EXPECT_FALSE(fs::exists(dir / "outputs")) << "a failed dispatch writes no outputs";
  keep_warm_cache(std::string("l2_broken/") + c.name, dir);  // what did compile stays valid

  r = coord({"exec", dir.string()});
  EXPECT_EQ(r.exit_code, c.exit_code) << r.all();
  EXPECT_EQ(r.out, std::string("PYPTO_EXEC_RESULT=") + c.marker + "\n") << r.all();
  for (const std::string& part : c.message_parts)
    EXPECT_TRUE(contains(r.err, part)) << "missing '" << part << "'\n" << r.all();
}

INSTANTIATE_TEST_SUITE_P(L2Broken, BrokenFixtureTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(BrokenFixtureListTest, EveryBrokenFixtureHasACase) {
  for (const auto& entry : fs::directory_iterator(kFixtures / "l2_broken")) {
    if (!entry.is_directory()) continue;
    bool found = false;
    for (const BrokenCase& c : kCases) found |= entry.path().filename() == c.name;
    EXPECT_TRUE(found) << entry.path() << " has no case in broken_fixtures_test.cc";
  }
}

// A run-time kernel error of a compiled program names the .ptl line of the
// instruction (docs/pto-format.md, "Source lines"), not generated C++.
TEST(CompiledKernelErrorTest, AnOutOfRangeLoadNamesTheProgramLine) {
  const fs::path work = scratch_dir("kernel_error_ptl_line");
  const fs::path program = work / "pick.ptl";
  // Compiled with i = 1; run with i = 7, past x's 4 rows.
  std::ofstream(program) << "kernel aiv pick(x: in f32[4, 16], y: out f32[1, 16], i: i32) {\n"
                            "  let t = load(x, [i, 0], [1, 16])\n"
                            "  store(t, y, [0, 0])\n"
                            "}\n"
                            "chip main(x: in f32[4, 16], y: out f32[1, 16], i: i32) { pick(x, y, i) }\n";
  const fs::path dir = work / "build";
  CoordResult c =
      run_split({PYPTO_COMPILE_BIN, program.string(), "-o", dir.string(), "--scalar", "i=1"});
  ASSERT_EQ(c.exit_code, 0) << c.all();
  CoordResult r = coord({"run", dir.string(), "--scalar", "i=7"});
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_TRUE(contains(r.err, "pick: load of a [1, 16] tile at [7, 0] is outside 'x' [4, 16] (at " +
                                  program.string() + ":2)"))
      << r.err;
}

}  // namespace
}  // namespace pypto::e2e
