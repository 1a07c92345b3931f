// pypto-compile -o DIR in-process: the real kernel lowering and reference
// interpreter behind the code generator, options, exit codes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "artifact/compiled_meta.h"
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

std::string testdata(const std::string& name) {
  return std::string(PYPTO_COMPILER_TESTDATA) + "/" + name;
}

fs::path scratch(const std::string& name) { return testing::scratch_dir(name, false); }

CompileArgs output_args(const std::string& program, const fs::path& dir) {
  CompileArgs a;
  a.input = testdata(program);
  a.output = dir.string();
  return a;
}

TEST(CodegenDriverTest, SoftmaxWritesAnL2BuildThatLoads) {
  const fs::path dir = scratch("softmax");
  const Ran r = run(output_args("softmax.ptl", dir));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, testdata("softmax.ptl") + ": wrote L2 build " + dir.string() +
                       ": entry 'main', 1 kernel, platform a2a3sim, golden data (seed 0)\n");
  const CompiledProgram p = CompiledProgram::from_dir(dir);
  EXPECT_EQ(p.meta().compiler_version, "pypto-compile 0.1.0");
  ASSERT_TRUE(p.golden().has_value());
  // softmax rows sum to 1.
  const Tensor y = read_npy(dir / "golden/expected/y.npy");
  float sum = 0;
  for (int c = 0; c < 128; ++c) sum += y.data_as<float>()[c];
  EXPECT_NEAR(sum, 1.0f, 1e-4f);
}

TEST(CodegenDriverTest, ReduceWritesAnL3BuildThatLoads) {
  const fs::path dir = scratch("reduce");
  CompileArgs a = output_args("reduce.ptl", dir);
  a.world = 2;
  a.check = true;
  const Ran r = run(a);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(": ok: L3 program"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote L3 build " + dir.string() +
                       ": entry 'main', 1 kernel, 2 dispatches, WORLD = 2"),
            std::string::npos)
      << r.out;
  const DistributedCompiledProgram p = DistributedCompiledProgram::from_dir(dir);
  EXPECT_EQ(p.world_size(), 2);
  // y[r] = x[0] + x[1] for every rank.
  const Tensor x = read_npy(dir / "golden/inputs/x.npy");
  const Tensor y = read_npy(dir / "golden/expected/y.npy");
  for (int i = 0; i < 256; ++i) {
    const float want = x.data_as<float>()[i] + x.data_as<float>()[256 + i];
    EXPECT_EQ(y.data_as<float>()[i], want) << i;
    EXPECT_EQ(y.data_as<float>()[256 + i], want) << i;
  }
}

TEST(CodegenDriverTest, InputReplacesASeededInput) {
  const fs::path dir = scratch("input");
  fs::create_directories(dir.parent_path());
  const fs::path file = dir.parent_path() / "x_input.npy";
  Tensor x = Tensor::empty(DType::kF32, {2, 1, 256});
  for (int i = 0; i < 512; ++i) x.data_as<float>()[i] = static_cast<float>(i % 7);
  write_npy(file, x);
  CompileArgs a = output_args("reduce.ptl", dir);
  a.world = 2;
  a.inputs = {"x=" + file.string()};
  const Ran r = run(a);
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream in(dir / "golden/inputs/x.npy", std::ios::binary);
  std::ostringstream got;
  got << in.rdbuf();
  EXPECT_EQ(got.str(), serialize_npy(x));
  // y[r][i] = x[0][i] + x[1][i] = i % 7 + (256 + i) % 7.
  EXPECT_EQ(read_npy(dir / "golden/expected/y.npy").data_as<float>()[5], 5.0f + 2.0f);
}

TEST(CodegenDriverTest, SeedChangesTheInputs) {
  const fs::path a_dir = scratch("seed0"), b_dir = scratch("seed1");
  ASSERT_EQ(run(output_args("softmax.ptl", a_dir)).code, 0);
  CompileArgs b = output_args("softmax.ptl", b_dir);
  b.seed = 1;
  const Ran r = run(b);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(serialize_npy(read_npy(a_dir / "golden/inputs/x.npy")),
            serialize_npy(read_npy(b_dir / "golden/inputs/x.npy")));
  EXPECT_EQ(CompiledProgram::from_dir(b_dir).golden()->seed, 1);
}

TEST(CodegenDriverTest, NoGoldenWritesNone) {
  const fs::path dir = scratch("nogolden");
  CompileArgs a = output_args("softmax.ptl", dir);
  a.no_golden = true;
  const Ran r = run(a);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("no golden data"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "golden"));
  EXPECT_NO_THROW(CompiledProgram::from_dir(dir));
}

TEST(CodegenDriverTest, BadInputsAreUsageErrors) {
  const fs::path dir = scratch("badinput");
  const fs::path file = dir.parent_path() / "bad_shape.npy";
  write_npy(file, Tensor::empty(DType::kF32, {4}));
  for (const std::string& spec : {std::string("x"), std::string("=f.npy"), "y=" + file.string(),
                                  "nope=" + file.string(), "x=" + file.string()}) {
    CompileArgs a = output_args("reduce.ptl", dir);
    a.world = 2;
    a.inputs = {spec};
    const Ran r = run(a);
    EXPECT_EQ(r.code, 2) << spec << ": " << r.err;
    EXPECT_NE(r.err.find("--input"), std::string::npos) << r.err;
  }
  CompileArgs both = output_args("reduce.ptl", dir);
  both.world = 2;
  both.no_golden = true;
  both.inputs = {"x=" + file.string()};
  EXPECT_EQ(run(both).code, 2);
  EXPECT_FALSE(fs::exists(dir / "distributed_meta.json"));
}

TEST(CodegenDriverTest, MissingInputFileIsInfra) {
  CompileArgs a = output_args("reduce.ptl", scratch("missing"));
  a.world = 2;
  a.inputs = {"x=/nonexistent/x.npy"};
  const Ran r = run(a);
  EXPECT_EQ(r.code, 3) << r.err;
}

TEST(CodegenDriverTest, ProgramErrorsWriteNothing) {
  const fs::path dir = scratch("errors");
  const fs::path p = dir.parent_path() / "bad.ptl";
  std::ofstream(p) << "chip main(x: in f32[4]) {\n  let a = b\n}\n";
  CompileArgs a;
  a.input = p.string();
  a.output = dir.string();
  const Ran r = run(a);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("use of undefined name 'b'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir));
}

TEST(CodegenDriverTest, UnsupportedConstructIsExitOneWithLocation) {
  const fs::path dir = scratch("unsupported");
  const fs::path p = dir.parent_path() / "f16_kernel_scalar.ptl";
  std::ofstream(p) << "kernel aiv k(a: in f32[1, 8], b: out f32[1, 8],\n"
                      "             n: f16) {\n"
                      "  store(load(a, [0, 0], [1, 8]), b, [0, 0])\n}\n"
                      "chip main(a: in f32[1, 8], b: out f32[1, 8]) { k(a, b, 1.0) }\n";
  CompileArgs a;
  a.input = p.string();
  a.output = dir.string();
  a.no_golden = true;
  const Ran r = run(a);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find(p.string() + ":2:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("f16 scalar parameter"), std::string::npos) << r.err;
}

// A code-generation error shows the source line and a caret under the place, as
// the checker's errors do, with -o and with --check alike.
TEST(CodegenDriverTest, CodeGenerationErrorsShowTheSourceLineAndACaret) {
  const fs::path dir = scratch("codegen_caret");
  const fs::path p = dir.parent_path() / "one_window_twice.ptl";
  std::ofstream(p) << "kernel aiv k(a: window f32[1, 4], b: window f32[1, 4], y: out f32[1, 4]) {\n"
                      "  store(load(a, [0, 0], [1, 4]), y, [0, 0])\n}\n"
                      "chip c(a: window f32[1, 4], b: window f32[1, 4], y: out f32[1, 4]) {\n"
                      "  k(a, b, y)\n}\n"
                      "host main(y: out f32[WORLD, 1, 4]) {\n"
                      "  let w = window_buffer(f32[1, 4])\n"
                      "  for r in 0 .. WORLD { c(w, w, y[r]) on r }\n}\n";
  for (bool check : {false, true}) {
    CompileArgs a;
    a.input = p.string();
    a.world = 2;
    if (check)
      a.check = true;
    else
      a.output = dir.string();
    const Ran r = run(a);
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_NE(r.err.find(p.string() + ":1:12: error: kernel 'k' is called with one window for "
                                      "two of its window parameters"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("\nkernel aiv k(a: window f32[1, 4], b: window f32[1, 4], y: out f32[1, "
                         "4]) {\n           ^"),
              std::string::npos)
        << r.err;
  }
  EXPECT_FALSE(fs::exists(dir));
}

// examples/: the quickstart is compiler/testdata/reduce.ptl; both programs compile.
TEST(CodegenDriverTest, ExamplesCompile) {
  const fs::path examples = fs::path(PYPTO_SOURCE_DIR) / "examples";
  std::ifstream a(examples / "allreduce.ptl"), b(testdata("reduce.ptl"));
  std::stringstream at, bt;
  at << a.rdbuf();
  bt << b.rdbuf();
  EXPECT_EQ(at.str(), bt.str());
  CompileArgs l3;
  l3.input = (examples / "allreduce.ptl").string();
  l3.output = scratch("example_allreduce").string();
  l3.world = 8;
  Ran r = run(l3);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(DistributedCompiledProgram::from_dir(*l3.output).world_size(), 8);
  CompileArgs l2;
  l2.input = (examples / "softmax.ptl").string();
  l2.output = scratch("example_softmax").string();
  r = run(l2);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NO_THROW(CompiledProgram::from_dir(*l2.output));
}

TEST(CodegenDriverTest, DeviceIdsSetTheWorldAndTheDistributedMeta) {
  const fs::path dir = scratch("device_ids");
  CompileArgs a = output_args("reduce.ptl", dir);
  a.device_ids = {4, 6};
  a.no_golden = true;
  const Ran r = run(a);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("WORLD = 2"), std::string::npos) << r.out;
  EXPECT_EQ(DistributedCompiledProgram::from_dir(dir).device_ids(),
            (std::vector<int64_t>{4, 6}));

  a.world = 3;  // disagrees with two ids
  Ran bad = run(a);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--world 3 but --device-ids lists 2 device(s)"), std::string::npos)
      << bad.err;
  a.world.reset();
  a.device_ids = {1, 1};
  bad = run(a);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--device-ids lists device 1 twice"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace pypto::compiler
