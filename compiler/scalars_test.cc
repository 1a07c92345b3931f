// Scalar parameters of the entry (recorded defaults, --scalar, golden data),
// float scalar expressions, and `--check` agreeing with `-o` on every program
// of examples/ and compiler/testdata/.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "artifact/host_orch.h"
#include "artifact/kernel_config.h"
#include "compiler/driver.h"
#include "compiler/test_util.h"
#include "pypto/compiled_program.h"
#include "pypto/distributed_compiled_program.h"
#include "pypto/npy.h"

namespace pypto::compiler {
namespace {

namespace fs = std::filesystem;

using testing::Ran;
using testing::run;

const fs::path kExamples = fs::path(PYPTO_COMPILER_TESTDATA) / ".." / ".." / "examples";

fs::path scratch(const std::string& name) { return testing::scratch_dir(name, false); }

fs::path write_program(const std::string& name, const std::string& text) {
  const fs::path file = scratch(name + ".ptl");
  std::ofstream(file) << text;
  return file;
}

TEST(ScalarsTest, AxpbRecordsItsScalarsAndComputesGoldenWithThem) {
  const fs::path dir = scratch("axpb");
  CompileArgs a;
  a.input = (kExamples / "axpb.ptl").string();
  a.output = dir.string();
  a.scalars = {"alpha=2.5", "b=0.1"};
  const Ran r = run(a);
  ASSERT_EQ(r.code, 0) << r.err;
  const CompiledProgram p = CompiledProgram::from_dir(dir);
  ASSERT_EQ(p.scalars().size(), 2u);
  EXPECT_EQ(p.scalars()[0].name, "alpha");
  EXPECT_EQ(p.scalars()[0].dtype(), DType::kF32);
  EXPECT_EQ(p.scalars()[0].value.text(), "2.5");
  EXPECT_EQ(p.scalars()[1].value.text(), "0.1");  // the f32 nearest 0.1, printed without noise
  const Tensor x = read_npy(dir / "golden/inputs/x.npy");
  const Tensor y = read_npy(dir / "golden/expected/y.npy");
  ASSERT_EQ(y.numel(), 16 * 256);
  const auto* xs = static_cast<const float*>(x.data());
  const auto* ys = static_cast<const float*>(y.data());
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(ys[i], xs[i] * 2.5f + 0.1f) << i;
}

TEST(ScalarsTest, AxpbWorldPassesTheHostScalarsToEveryDispatch) {
  const fs::path dir = scratch("axpb_world");
  CompileArgs a;
  a.input = (kExamples / "axpb_world.ptl").string();
  a.output = dir.string();
  a.world = 2;
  a.scalars = {"b=-1"};
  const Ran r = run(a);
  ASSERT_EQ(r.code, 0) << r.err;
  const DistributedCompiledProgram p = DistributedCompiledProgram::from_dir(dir);
  ASSERT_EQ(p.scalars().size(), 2u);
  EXPECT_EQ(p.scalars()[1].value.text(), "-1");
  ASSERT_EQ(p.host_orch().dispatches.size(), 2u);
  const HostArg& alpha = p.host_orch().dispatches[0].args.at(2);
  EXPECT_EQ(alpha.kind, HostArgKind::kScalar);
  EXPECT_EQ(alpha.param, "alpha");
  EXPECT_EQ(alpha.dtype, DType::kF32);
}

TEST(ScalarsTest, ABadScalarIsAUsageError) {
  const fs::path file = write_program("i8", R"(
kernel aiv k(x: in i32[1, 16], y: out i32[1, 16], s: i32) {
  store(add(load(x, [0, 0], [1, 16]), s), y, [0, 0])
}
chip main(x: in i32[1, 16], y: out i32[1, 16], n: i8) { k(x, y, n) }
)");
  CompileArgs a;
  a.input = file.string();
  a.output = scratch("i8_out").string();
  a.scalars = {"n=300"};
  Ran r = run(a);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "pypto-compile: error: --scalar n=300: 300 is outside the range of i8 (-128 .. 127)\n");
  a.scalars = {"m=1"};
  r = run(a);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "pypto-compile: error: --scalar m=1: the program has no scalar parameter 'm' (its "
            "scalar parameters: n)\n");
  a.scalars = {"n=1.5"};
  r = run(a);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "pypto-compile: error: --scalar n=1.5: '1.5' is not an integer; i8 takes an integer "
            "in -128 .. 127\n");
}

TEST(ScalarsTest, FloatScalarExpressionsInAChipFunctionMatchTheReference) {
  // t = a * 2.0 + n, then t / 4 or -t to the kernel: the golden data is the
  // interpreter's; the orchestration computes the same in double.
  const fs::path file = write_program("fexpr", R"(
const HALF = 0.5
kernel aiv k(x: in f32[1, 16], y: out f32[1, 16], s: f32) {
  store(mul(load(x, [0, 0], [1, 16]), s), y, [0, 0])
}
chip main(x: in f32[1, 16], y: out f32[1, 16], a: f32, n: i32) {
  let t = a * 2.0 + n
  if t > 1.5 { k(x, y, t / 4 + HALF) } else { k(x, y, -t) }
}
)");
  const fs::path dir = scratch("fexpr_out");
  CompileArgs a;
  a.input = file.string();
  a.output = dir.string();
  a.scalars = {"a=0.25", "n=3"};
  const Ran r = run(a);
  ASSERT_EQ(r.code, 0) << r.err;
  const Tensor x = read_npy(dir / "golden/inputs/x.npy");
  const Tensor y = read_npy(dir / "golden/expected/y.npy");
  const auto* xs = static_cast<const float*>(x.data());
  const auto* ys = static_cast<const float*>(y.data());
  for (int i = 0; i < 16; ++i) EXPECT_EQ(ys[i], xs[i] * 1.375f) << i;  // (0.5 + 3) / 4 + 0.5
  std::ifstream orch(dir / "orchestration/main.cpp");
  std::stringstream text;
  text << orch.rdbuf();
  EXPECT_NE(text.str().find("bits_of_f32(((v_t / static_cast<double>(4)) + 0.5))"),
            std::string::npos)
      << text.str();
}

// `--check` runs what `-o` runs: the same exit code, and never an internal error.
void expect_check_agrees(const fs::path& file, std::optional<int64_t> world) {
  CompileArgs check;
  check.input = file.string();
  check.world = world;
  check.check = true;
  CompileArgs output = check;
  output.check = false;
  output.output = scratch("agree_" + file.stem().string()).string();
  const Ran c = run(check);
  const Ran o = run(output);
  EXPECT_EQ(c.code, o.code) << file << "\n--check: " << c.out << c.err << "\n-o: " << o.out
                            << o.err;
  EXPECT_EQ(c.err, o.err) << file;
  EXPECT_EQ(c.err.find("internal error"), std::string::npos) << c.err;
  if (c.code == 0) EXPECT_NE(c.out.find(": ok: "), std::string::npos) << c.out;
}

TEST(CheckAgreesWithOutputTest, EveryExampleAndTestProgram) {
  std::vector<fs::path> files;
  for (const fs::path& dir : {kExamples, fs::path(PYPTO_COMPILER_TESTDATA),
                              fs::path(PYPTO_COMPILER_TESTDATA) / "lib"})
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.path().extension() == ".ptl") files.push_back(entry.path());
  ASSERT_GE(files.size(), 10u);
  for (const fs::path& f : files) {
    std::ifstream in(f);
    std::stringstream text;
    text << in.rdbuf();
    const bool l3 = text.str().find("\nhost ") != std::string::npos ||
                    text.str().rfind("host ", 0) == 0;
    expect_check_agrees(f, l3 ? std::optional<int64_t>(2) : std::nullopt);
  }
}

TEST(CheckAgreesWithOutputTest, ProgramsCheckOnceAcceptedButOutputRejected) {
  // A float literal to a kernel scalar, scalar parameters of the entry, a float
  // constant in a kernel: all compile now. A wait nobody satisfies: both fail.
  expect_check_agrees(write_program("float_literal", R"(
kernel aiv k(x: in f32[1, 16], y: out f32[1, 16], s: f32) {
  store(mul(load(x, [0, 0], [1, 16]), s), y, [0, 0])
}
chip main(x: in f32[1, 16], y: out f32[1, 16]) { k(x, y, 2.5) }
)"),
                      std::nullopt);
  expect_check_agrees(write_program("const_alpha", R"(
const ALPHA = 2.5
kernel aiv k(x: in f32[1, 16], y: out f32[1, 16]) {
  store(mul(load(x, [0, 0], [1, 16]), ALPHA), y, [0, 0])
}
chip main(x: in f32[1, 16], y: out f32[1, 16]) { k(x, y) }
)"),
                      std::nullopt);
  const fs::path deadlock = write_program("deadlock", R"(
kernel aiv k(x: in f32[1, 16], y: out f32[1, 16], sig: window i32[WORLD, 1]) {
  wait(sig, [0, 0], eq, 1)
  store(load(x, [0, 0], [1, 16]), y, [0, 0])
}
chip c(x: in f32[1, 16], y: out f32[1, 16], sig: window i32[WORLD, 1]) { k(x, y, sig) }
host main(x: in f32[WORLD, 1, 16], y: out f32[WORLD, 1, 16]) {
  let sig = window_buffer(i32[WORLD, 1])
  for r in 0 .. WORLD { c(x[r], y[r], sig) on r }
}
)");
  expect_check_agrees(deadlock, 2);
  CompileArgs check;
  check.input = deadlock.string();
  check.world = 2;
  check.check = true;
  const Ran c = run(check);
  EXPECT_EQ(c.code, 1);
  EXPECT_NE(c.err.find("deadlock: rank 0 waits forever in kernel 'k'"), std::string::npos) << c.err;
  EXPECT_EQ(c.out, "");
}

}  // namespace
}  // namespace pypto::compiler
