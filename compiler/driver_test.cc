#include "compiler/driver.h"
#include "compiler/test_util.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace pypto::compiler {
namespace {

namespace fs = std::filesystem;

using testing::Ran;
using testing::run;

std::string testdata(const std::string& name) {
  return std::string(PYPTO_COMPILER_TESTDATA) + "/" + name;
}

CompileArgs check_args(const std::string& input) {
  CompileArgs a;
  a.input = input;
  a.check = true;
  return a;
}

TEST(DriverTest, CleanProgramExitsZero) {
  CompileArgs a = check_args(testdata("reduce.ptl"));
  a.world = 8;
  const Ran r = run(a);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, testdata("reduce.ptl") +
                       ": ok: L3 program, entry 'main', WORLD = 8, platform a2a3sim\n");
}

TEST(DriverTest, ProgramErrorsExitOne) {
  const fs::path p = fs::temp_directory_path() / "pypto_compile_driver_test.ptl";
  {
    std::ofstream f(p);
    f << "chip main(x: in f32[4]) {\n  let a = b\n}\n";
  }
  const Ran r = run(check_args(p.string()));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, p.string() +
                       ":2:11: error: use of undefined name 'b'\n  let a = b\n"
                       "          ^\n1 error generated.\n");
  fs::remove(p);
}

TEST(DriverTest, MissingFileExitsOne) {
  const Ran r = run(check_args("/nonexistent/prog.ptl"));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err,
            "pypto-compile: error: cannot read '/nonexistent/prog.ptl'\n"
            "1 error generated.\n");
}

TEST(DriverTest, UsageErrorsExitTwo) {
  CompileArgs a = check_args(testdata("softmax.ptl"));
  a.platform = "x86";
  EXPECT_EQ(run(a).code, 2);
  a = check_args(testdata("softmax.ptl"));
  a.world = 0;
  EXPECT_EQ(run(a).code, 2);
  a = check_args(testdata("softmax.ptl"));
  a.check = false;
  const Ran r = run(a);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("pass --check"), std::string::npos);
}

// -o DIR writes the build (compiler/codegen/codegen_driver_test.cc has the details);
// with neither --check nor -o there is nothing to do.
TEST(DriverTest, NeitherCheckNorOutputIsUsage) {
  CompileArgs a = check_args(testdata("softmax.ptl"));
  a.check = false;
  const Ran r = run(a);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("nothing to do: pass --check or -o DIR"), std::string::npos) << r.err;
}

TEST(DriverTest, L3ProgramWithoutWorld) {
  const Ran r = run(check_args(testdata("reduce.ptl")));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("pass the world size with --world N"), std::string::npos);
}

TEST(DriverTest, PlatformChoosesTheLimits) {
  CompileArgs a = check_args(testdata("matmul_colshard.ptl"));
  a.world = 2;
  a.platform = "a5sim";
  const Ran r = run(a);
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST(DriverTest, LibraryDirectoryServesImports) {
  CompileArgs a = check_args(testdata("allreduce_prog.ptl"));
  a.world = 8;
  const Ran without = run(a);
  EXPECT_EQ(without.code, 1);
  EXPECT_NE(without.err.find("cannot find imported file 'ring_demo.ptl'"), std::string::npos);
  a.lib_dirs = {testdata("lib")};
  const Ran with = run(a);
  EXPECT_EQ(with.code, 0) << with.err;
}

}  // namespace
}  // namespace pypto::compiler
