// End to end: compile the example programs with pypto-compile's driver and run
// the build directories with the real pypto-coord (L3: rank agents under
// mpirun), validating against the golden data the reference interpreter made.
// Also the f16/bf16 programs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/subprocess.h"
#include "compiler/driver.h"
#include "compiler/test_util.h"

namespace pypto::compiler {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) { return testing::scratch_dir(name, true); }

int compile(const std::string& program, const fs::path& out, std::optional<int64_t> world,
            std::string& messages) {
  CompileArgs a;
  a.input = program.find('/') == std::string::npos
                ? std::string(PYPTO_COMPILER_TESTDATA) + "/" + program
                : program;
  a.output = out.string();
  a.world = world;
  std::ostringstream o, e;
  const int code = run_compile(a, o, e);
  messages = o.str() + e.str();
  return code;
}

SubprocessResult coord(const std::vector<std::string>& args, const fs::path& work) {
  std::vector<std::string> argv{PYPTO_COORD_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  SubprocessOptions options;
  options.timeout = std::chrono::seconds(240);
  options.extra_env = {"PYPTO_RANK=" + std::string(PYPTO_RANK_BIN),
                       "PYPTO_BLOB_STORE=" + (work / "blobs").string()};
  return run_subprocess(argv, options);
}

TEST(CodegenE2eTest, ReduceAtWorldTwoRunsAndValidates) {
  const fs::path work = scratch("reduce");
  const fs::path build = work / "build";
  std::string messages;
  ASSERT_EQ(compile("reduce.ptl", build, 2, messages), 0) << messages;
  const SubprocessResult r = coord({"run", build.string(), "--validate"}, work);
  EXPECT_EQ(r.exit_code, 0) << r.describe() << "\n" << r.output;
  EXPECT_TRUE(fs::exists(build / "outputs"));
}

TEST(CodegenE2eTest, SoftmaxL2RunsAndValidates) {
  const fs::path work = scratch("softmax");
  const fs::path build = work / "build";
  std::string messages;
  ASSERT_EQ(compile("softmax.ptl", build, std::nullopt, messages), 0) << messages;
  const SubprocessResult r = coord({"run", build.string(), "--validate"}, work);
  EXPECT_EQ(r.exit_code, 0) << r.describe() << "\n" << r.output;
}

// Inlined chip calls, an intermediate tensor reused across loop iterations, a
// cube kernel, views, x[i], a condition on a dispatch scalar and a window.
constexpr const char* kRichProgram = R"(
const T = 16
kernel aic mm(a: in f32[T, T], b: in f32[T, T], c: out f32[T, T]) {
  store(matmul(load(a, [0, 0], [T, T]), load(b, [0, 0], [T, T])), c, [0, 0])
}
kernel aiv addk(a: in f32[T, T], b: in f32[T, T], c: out f32[T, T], w: window f32[T, T]) {
  store(add(load(a, [0, 0], [T, T]), load(b, [0, 0], [T, T])), c, [0, 0])
}
chip stage(x: in f32[T, T], y: out f32[T, T]) {
  mm(x, x, y)
}
chip body(x: in f32[4, T, T], y: out f32[4, T, T], w: window f32[T, T], n: i32) {
  let tmp = tensor(f32[T, T])
  for i in 0 .. 4 {
    if i % 2 == 0 && n > 0 {
      stage(x[i], tmp)
      addk(x[i], tmp, y[i], w)
    } else {
      stage(view(x, [i, 0, 0], [1, T, T])[0], y[i])
    }
  }
}
host main(x: in f32[WORLD, 4, T, T], y: out f32[WORLD, 4, T, T]) {
  let w = window_buffer(f32[T, T])
  for r in 0 .. WORLD { body(x[r], y[r], w, r) on r }
}
)";

TEST(CodegenE2eTest, InlinedChipCallsIntermediatesAndCubeKernelsValidate) {
  const fs::path work = scratch("rich");
  const fs::path program = work / "rich.ptl";
  {
    std::ofstream f(program);
    f << kRichProgram;
  }
  const fs::path build = work / "build";
  std::string messages;
  ASSERT_EQ(compile(program.string(), build, 2, messages), 0) << messages;
  EXPECT_TRUE(fs::exists(build / "next_levels/1/kernels/aic/mm.cpp"));
  const SubprocessResult r = coord({"run", build.string(), "--validate"}, work);
  EXPECT_EQ(r.exit_code, 0) << r.describe() << "\n" << r.output;
}

// f16/bf16 tiles (the kernels round after every instruction as the interpreter does).

// The column-sharded matmul with f16 operands (f32 accumulation), two ranks.
TEST(HalfE2eTest, MatmulColshardF16RunsAndValidates) {
  const fs::path work = scratch("colshard");
  const fs::path build = work / "build";
  std::string messages;
  ASSERT_EQ(compile("matmul_colshard.ptl", build, 2, messages),
            0)
      << messages;
  const SubprocessResult r = coord({"run", build.string(), "--validate"}, work);
  EXPECT_EQ(r.exit_code, 0) << r.describe() << "\n" << r.output;
}

// f16 and bf16 elementwise arithmetic, reductions and a scalar operand in an
// L2 program: the kernel rounds after every instruction as the interpreter does.
constexpr const char* kHalfProgram = R"(
const R = 8
const C = 48
kernel aiv norm16(x: in f16[R, C], y: out f16[R, C], s: out f16[R, 1]) {
  let t = load(x, [0, 0], [R, C])
  let e = exp(sub(mul(t, 0.75), row_max(t)))
  store(add(div(e, row_sum(e)), 0.125), y, [0, 0])
  store(row_sum(t), s, [0, 0])
}
kernel aiv scale_bf16(x: in bf16[R, C], y: out bf16[R, C]) {
  let t = load(x, [0, 0], [R, C])
  store(max(sub(mul(t, t), 1.5), neg(t)), y, [0, 0])
}
chip main(a: in f16[2, R, C], b: out f16[2, R, C], s: out f16[2, R, 1],
          c: in bf16[R, C], d: out bf16[R, C]) {
  for i in 0 .. 2 { norm16(a[i], b[i], s[i]) }
  scale_bf16(c, d)
}
)";

TEST(HalfE2eTest, HalfArithmeticL2RunsAndValidates) {
  const fs::path work = scratch("half_l2");
  const fs::path program = work / "half.ptl";
  std::ofstream(program) << kHalfProgram;
  const fs::path build = work / "build";
  std::string messages;
  ASSERT_EQ(compile(program.string(), build, std::nullopt, messages), 0) << messages;
  const SubprocessResult r = coord({"run", build.string(), "--validate"}, work);
  EXPECT_EQ(r.exit_code, 0) << r.describe() << "\n" << r.output;
}

}  // namespace
}  // namespace pypto::compiler
