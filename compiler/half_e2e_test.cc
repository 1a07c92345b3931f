// End to end with f16/bf16 tiles: compile with pypto-compile's driver, run the
// build directory with the real pypto-coord (L3: rank agents under mpirun)
// and validate against the golden data of the reference interpreter.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/subprocess.h"
#include "compiler/driver.h"

namespace pypto::compiler {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  fs::path dir =
      fs::path(::testing::TempDir()) / ("pypto_half_e2e_" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

int compile(const std::string& program, const fs::path& out, std::optional<int64_t> world,
            std::string& messages) {
  CompileArgs a;
  a.input = program;
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

// The column-sharded matmul with f16 operands (f32 accumulation), two ranks.
TEST(HalfE2eTest, MatmulColshardF16RunsAndValidates) {
  const fs::path work = scratch("colshard");
  const fs::path build = work / "build";
  std::string messages;
  ASSERT_EQ(compile(std::string(PYPTO_COMPILER_TESTDATA) + "/matmul_colshard.ptl", build, 2,
                    messages),
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
