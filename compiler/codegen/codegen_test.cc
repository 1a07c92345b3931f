// Code generation to the build-directory contract: orchestration C++, kernel
// wrappers, the host plan and the sidecars, with a fake kernel lowering (so
// these tests pin what compiler/codegen_* generates, not what the lowering
// does). The generated directories must load through the artifact layer's
// from_dir, which runs every cross-file check.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "artifact/compiled_meta.h"
#include "artifact/distributed_meta.h"
#include "artifact/host_orch.h"
#include "artifact/kernel_config.h"
#include "artifact/splice.h"
#include "common/subprocess.h"
#include "compiler/codegen/codegen_build.h"
#include "compiler/codegen/codegen_host_plan.h"
#include "compiler/codegen/codegen_kernel.h"
#include "compiler/codegen/codegen_orchestration.h"
#include "compiler/test_util.h"
#include "pypto/build_kind.h"
#include "pypto/compiled_program.h"
#include "pypto/distributed_compiled_program.h"
#include "pypto/error.h"
#include "pypto/golden_spec.h"
#include "pypto/npy.h"

namespace pypto::compiler {
namespace {

namespace fs = std::filesystem;

std::string testdata(const std::string& name) { return testing::read_testdata(name); }

// Checks a program given as text; fails the test on diagnostics.
testing::FrontEndRun front_end(const std::string& text, int64_t world = 2) {
  testing::FrontEndRun run = testing::run_front_end({{"t.ptl", text}}, world);
  EXPECT_EQ(run.errors, 0) << run.diagnostics;
  return run;
}

LoweredKernel fake_lowering(const Function& k) {
  LoweredKernel l;
  l.unit = k.name;
  l.pto = "# fake listing of " + k.name + "\n";
  l.cpp_body = "// fake body of " + k.name + "\nstatic void ptoas_" + k.name +
               "(const pypto_kernel_args* args) { (void)args; }";
  return l;
}

// Compares with compiler/testdata/codegen/<name>; PYPTO_UPDATE_GOLDEN=1 rewrites it.
void expect_golden(const std::string& name, const std::string& actual) {
  const fs::path path = fs::path(PYPTO_COMPILER_TESTDATA) / "codegen" / name;
  const char* update = std::getenv("PYPTO_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  EXPECT_EQ(actual, testing::read_text(path)) << "generated text differs from " << path
                                 << " (PYPTO_UPDATE_GOLDEN=1 rewrites it)";
}

fs::path scratch(const std::string& name) { return testing::scratch_dir(name, false); }

const Function& function(const Program& p, const std::string& name) {
  const Function* f = FunctionTable(p).find(name);
  EXPECT_NE(f, nullptr) << name;
  return *f;
}

GeneratedOrchestration orchestration_of(const testing::FrontEndRun& run, const std::string& chip,
                                        std::map<std::string, int64_t> func_ids) {
  OrchestrationOptions options;
  options.func_ids = std::move(func_ids);
  options.origin = "t.ptl";
  return generate_orchestration(function(*run.program, chip), FunctionTable(*run.program), options);
}

BuildRequest request_for(const testing::FrontEndRun& run, int64_t world,
                         const std::string& origin) {
  BuildRequest r;
  r.program = run.program.get();
  r.entry = run.result.entry;
  r.distributed = run.result.distributed;
  r.world = world;
  r.origin = origin;
  return r;
}

// Golden data with arbitrary values: from_dir checks files, not numbers.
GoldenData fake_golden(const Function& entry) {
  GoldenData g;
  g.seed = 7;
  for (const Param& p : entry.params) {
    g.before.push_back(Tensor::empty(p.type.dtype, p.type.shape));
    g.after.push_back(Tensor::empty(p.type.dtype, p.type.shape));
  }
  return g;
}

// ------------------------------------------------------------ orchestration

TEST(CodegenOrchestrationTest, SoftmaxMatchesGolden) {
  auto run = front_end(testdata("softmax.ptl"));
  expect_golden("softmax_main.cpp", orchestration_of(run, "main", {{"softmax_rows", 0}}).source);
}

TEST(CodegenOrchestrationTest, ReduceMatchesGoldenAndRecordsWindowUses) {
  auto run = front_end(testdata("reduce.ptl"));
  GeneratedOrchestration g = orchestration_of(run, "chip_orch", {{"reduce_step", 0}});
  expect_golden("reduce_chip_orch.cpp", g.source);
  ASSERT_EQ(g.window_uses.size(), 2u);
  EXPECT_EQ(g.window_uses[0].kernel_param, "data");
  EXPECT_EQ(g.window_uses[0].chip_param, "data");
  EXPECT_EQ(g.window_uses[1].kernel_param, "signal");
  EXPECT_EQ(g.window_uses[1].chip_param, "signal");
}

// Inlined chip calls, intermediates, scalars, conditions and x[i]: the
// generated C++ compiles against the kernel ABI header as the assembler does.
constexpr const char* kRichProgram = R"(
const T = 16
kernel aiv scale(a: in f32[T, T], b: out f32[T, T], k: i32) {
  store(mul(load(a, [0, 0], [T, T]), 2.0), b, [0, 0])
}
kernel aiv combine(a: in f32[T, T], b: in f32[T, T], c: out f32[T, T],
                   w: window f32[T, T]) {
  store(add(load(a, [0, 0], [T, T]), load(b, [0, 0], [T, T])), c, [0, 0])
}
chip stage(x: in f32[T, T], y: out f32[T, T], n: i32) {
  scale(x, y, n)
}
chip body(x: in f32[4, T, T], y: out f32[4, T, T], w: window f32[T, T], n: i32) {
  let tmp = tensor(f32[T, T])
  for i in 0 .. 4 {
    if i % 2 == 0 && n > 0 {
      stage(x[i], tmp, max(n, i))
      combine(x[i], tmp, y[i], w)
    } else {
      stage(view(x, [i, 0, 0], [1, T, T])[0], y[i], n + rank())
    }
  }
}
host main(x: in f32[WORLD, 4, T, T], y: out f32[WORLD, 4, T, T]) {
  let w = window_buffer(f32[T, T])
  for r in 0 .. WORLD { body(x[r], y[r], w, r + 1) on r }
}
)";

TEST(CodegenOrchestrationTest, GeneratedSourceCompiles) {
  auto run = front_end(kRichProgram);
  GeneratedOrchestration g = orchestration_of(run, "body", {{"scale", 0}, {"combine", 1}});
  ASSERT_EQ(g.window_uses.size(), 1u);
  EXPECT_EQ(g.window_uses[0].kernel_param, "w");
  EXPECT_NE(g.source.find("g_intermediate0"), std::string::npos) << g.source;
  EXPECT_NE(g.source.find("inlined: stage"), std::string::npos) << g.source;
  const fs::path dir = scratch("compiles");
  fs::create_directories(dir);
  const fs::path src = dir / "body.cpp";
  std::ofstream(src) << g.source;
  const fs::path obj = dir / "body.o";
  SubprocessResult r = run_subprocess(
      {"c++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-c", "-I",
       std::string(PYPTO_SOURCE_DIR) + "/include", src.string(), "-o", obj.string()});
  EXPECT_EQ(r.exit_code, 0) << r.output << "\n" << g.source;
}

TEST(CodegenOrchestrationTest, FloatScalarArgumentIsItsF32BitPattern) {
  auto run = front_end(R"(
kernel aiv k(a: in f32[1, 16], b: out f32[1, 16], s: f32) { store(load(a, [0, 0], [1, 16]), b, [0, 0]) }
chip main(a: in f32[1, 16], b: out f32[1, 16]) { k(a, b, 0.5) }
)");
  const std::string source = orchestration_of(run, "main", {{"k", 0}}).source;
  EXPECT_NE(source.find("const int64_t scalars[1] = {bits_of_f32(0.5)};"), std::string::npos)
      << source;
}

// ------------------------------------------------------------ kernel wrapper

TEST(CodegenKernelTest, WrapperMatchesGoldenAndSplices) {
  auto run = front_end(testdata("reduce.ptl"));
  const Function& k = function(*run.program, "reduce_step");
  const LoweredKernel lowered = fake_lowering(k);
  KernelSourceOptions options;
  options.func_id = 0;
  options.origin = "reduce.ptl";
  const std::string source = generate_kernel_source(k, lowered, options);
  expect_golden("reduce_step_kernel.cpp", source);
  // The replay splice finds the body between the sentinels: splicing the same
  // body back is the identity.
  EXPECT_EQ(splice_between_sentinels(source, ptoas_body(lowered), "reduce_step.cpp"), source);
  EXPECT_NE(source.find("num_tensors != 2 || args->num_scalars != 0"), std::string::npos);
}

// ------------------------------------------------------------ host plan

TEST(CodegenHostPlanTest, ReduceAtWorldTwo) {
  auto run = front_end(testdata("reduce.ptl"), 2);
  const HostPlan plan = plan_host(*run.result.entry, FunctionTable(*run.program), 2);
  ASSERT_EQ(plan.orch.windows.size(), 2u);
  EXPECT_EQ(plan.orch.windows[0], (WindowInfo{"data", DType::kF32, {1, 256}, 1024, {0, 1}}));
  EXPECT_EQ(plan.orch.windows[1], (WindowInfo{"signal", DType::kI32, {2, 1}, 8, {0, 1}}));
  ASSERT_EQ(plan.orch.dispatches.size(), 2u);
  for (int64_t r = 0; r < 2; ++r) {
    const Dispatch& d = plan.orch.dispatches[static_cast<size_t>(r)];
    EXPECT_EQ(d.rank, r);
    EXPECT_EQ(d.program, "chip_orch");
    ASSERT_EQ(d.args.size(), 4u);
    EXPECT_EQ(d.args[0], HostArg::host("x", {r, 0, 0}, {1, 1, 256}));
    EXPECT_EQ(d.args[1], HostArg::host("y", {r, 0, 0}, {1, 1, 256}));
    EXPECT_EQ(d.args[2], HostArg::window_arg("data"));
    EXPECT_EQ(d.args[3], HostArg::window_arg("signal"));
  }
  ASSERT_EQ(plan.chips.size(), 1u);
  EXPECT_EQ(plan.chips[0]->name, "chip_orch");
  EXPECT_EQ(plan.dispatches[1].windows.at("signal"), "signal");
}

TEST(CodegenHostPlanTest, UnrollsLoopsConditionsViewsAndHostCalls) {
  auto run = front_end(R"(
kernel aiv k(a: in f32[1, 8], b: out f32[1, 8], w: window f32[1, 8]) {
  store(load(a, [0, 0], [1, 8]), b, [0, 0])
}
chip c(a: in f32[1, 8], b: out f32[1, 8], w: window f32[1, 8], s: i32) { k(a, b, w) }
chip c2(a: in f32[1, 8], b: out f32[1, 8], s: i32) { }
host helper(x: in f32[WORLD, 2, 8], y: out f32[WORLD, 2, 8], row: i32) {
  for r in 0 .. WORLD {
    if r % 2 == 0 {
      c2(view(x[r], [row, 0], [1, 8]), view(y[r], [row, 0], [1, 8]), r * 10 + row) on r
    } else {
      c2(view(x, [r, row, 0], [1, 1, 8])[0], view(y, [r, row, 0], [1, 1, 8])[0], -row) on r
    }
  }
}
host main(x: in f32[WORLD, 2, 8], y: out f32[WORLD, 2, 8]) {
  let w = window_buffer(f32[1, 8])
  for row in 0 .. 2 step 1 { helper(x, y, row) }
  c(view(x[0], [1, 0], [1, 8]), view(y[0], [1, 0], [1, 8]), w, 99) on (WORLD - 1)
}
)",
                       3);
  const HostPlan plan = plan_host(*run.result.entry, FunctionTable(*run.program), 3);
  ASSERT_EQ(plan.orch.windows.size(), 1u);
  EXPECT_EQ(plan.orch.windows[0].ranks, (std::vector<int64_t>{0, 1, 2}));
  ASSERT_EQ(plan.orch.dispatches.size(), 7u);
  const Dispatch& d0 = plan.orch.dispatches[0];  // row 0, rank 0: view(x[0], [0, 0], [1, 8])
  EXPECT_EQ(d0.rank, 0);
  EXPECT_EQ(d0.args[0], HostArg::host("x", {0, 0, 0}, {1, 1, 8}));
  EXPECT_EQ(d0.args[1], HostArg::host("y", {0, 0, 0}, {1, 1, 8}));
  EXPECT_EQ(d0.program, "c2");
  EXPECT_EQ(d0.args[2], HostArg::scalar(0));
  const Dispatch& d4 = plan.orch.dispatches[4];  // row 1, rank 1 (odd)
  EXPECT_EQ(d4.rank, 1);
  EXPECT_EQ(d4.args[0], HostArg::host("x", {1, 1, 0}, {1, 1, 8}));
  EXPECT_EQ(d4.args[1], HostArg::host("y", {1, 1, 0}, {1, 1, 8}));
  EXPECT_EQ(d4.args[2], HostArg::scalar(-1));
  const Dispatch& d5 = plan.orch.dispatches[5];  // row 1, rank 2
  EXPECT_EQ(d5.args[2], HostArg::scalar(21));
  const Dispatch& d6 = plan.orch.dispatches[6];
  EXPECT_EQ(d6.rank, 2);
  EXPECT_EQ(d6.args[0], HostArg::host("x", {0, 1, 0}, {1, 1, 8}));
  EXPECT_EQ(d6.program, "c");
  EXPECT_EQ(d6.args[2], HostArg::window_arg("w"));
  EXPECT_EQ(d6.args[3], HostArg::scalar(99));
  ASSERT_EQ(plan.chips.size(), 2u);
  EXPECT_EQ(plan.chips[0]->name, "c2");
  EXPECT_EQ(plan.chips[1]->name, "c");
}

TEST(CodegenHostPlanTest, WindowsCreatedInALoopGetDistinctNames) {
  auto run = front_end(R"(
kernel aiv k(a: in f32[1, 8], b: out f32[1, 8], w: window f32[1, 8]) {
  store(load(a, [0, 0], [1, 8]), b, [0, 0])
}
chip c(a: in f32[1, 8], b: out f32[1, 8], w: window f32[1, 8]) { k(a, b, w) }
host main(x: in f32[WORLD, 1, 8], y: out f32[WORLD, 1, 8]) {
  for i in 0 .. 2 {
    let w = window_buffer(f32[1, 8])
    for r in 0 .. WORLD { c(x[r], y[r], w) on r }
  }
}
)");
  const HostPlan plan = plan_host(*run.result.entry, FunctionTable(*run.program), 2);
  ASSERT_EQ(plan.orch.windows.size(), 2u);
  EXPECT_EQ(plan.orch.windows[0].name, "w");
  EXPECT_EQ(plan.orch.windows[1].name, "w_1");
  EXPECT_EQ(plan.orch.dispatches[3].args[2], HostArg::window_arg("w_1"));
}

// ------------------------------------------------------------ whole builds

TEST(CodegenBuildTest, SoftmaxL2LoadsWithCompiledProgram) {
  auto run = front_end(testdata("softmax.ptl"));
  const fs::path dir = scratch("softmax");
  const BuildSummary s = write_build(dir, request_for(run, 1, "softmax.ptl"), fake_lowering,
                                     fake_golden(*run.result.entry));
  EXPECT_EQ(s.kind, BuildKind::kL2);
  EXPECT_EQ(s.kernels, 1u);
  EXPECT_TRUE(s.golden);
  EXPECT_EQ(detect_build_kind(dir), BuildKind::kL2);
  const CompiledProgram p = CompiledProgram::from_dir(dir);
  EXPECT_EQ(p.name(), "main");
  ASSERT_EQ(p.params().size(), 2u);
  EXPECT_EQ(p.params()[0].type_string(), "f32[1024, 128]");
  const KernelConfig& kc = p.kernel_config();
  ASSERT_EQ(kc.kernels.size(), 1u);
  EXPECT_EQ(kc.kernels[0].source, "kernels/aiv/softmax_rows.cpp");
  EXPECT_EQ(kc.kernels[0].signature, (std::vector<ArgKind>{ArgKind::kIn, ArgKind::kOut}));
  EXPECT_EQ(kc.orchestrations[0].source, "orchestration/main.cpp");
  EXPECT_EQ(kc.orchestrations[0].function_name, "orchestration_entry");
  ASSERT_TRUE(p.golden().has_value());
  EXPECT_EQ(p.golden()->outputs, (std::vector<std::string>{"y"}));
  EXPECT_EQ(p.golden()->rtol, 1e-5);
  EXPECT_EQ(p.golden()->seed, 7);
  EXPECT_EQ(testing::read_text(dir / "ptoas/softmax_rows.cpp"),
            ptoas_body(fake_lowering(function(*run.program, "softmax_rows"))));
  EXPECT_EQ(testing::read_text(dir / "debug/run"), kDebugRunScript);
  EXPECT_TRUE((fs::status(dir / "debug/run").permissions() & fs::perms::owner_exec) !=
              fs::perms::none);
  // The ptoas listing is not newer than its C++ (a fresh build is not an edited one).
  EXPECT_LE(fs::last_write_time(dir / "ptoas/softmax_rows.pto"),
            fs::last_write_time(dir / "ptoas/softmax_rows.cpp"));
}

TEST(CodegenBuildTest, DebugRunIsTheFixturesScript) {
  EXPECT_EQ(std::string(kDebugRunScript),
            testing::read_text(fs::path(PYPTO_SOURCE_DIR) / "tests/fixtures/l3/allreduce_w2/debug/run"));
}

TEST(CodegenBuildTest, ReduceL3LoadsWithDistributedCompiledProgram) {
  auto run = front_end(testdata("reduce.ptl"), 4);
  const fs::path dir = scratch("reduce");
  const BuildSummary s = write_build(dir, request_for(run, 4, "reduce.ptl"), fake_lowering,
                                     fake_golden(*run.result.entry));
  EXPECT_EQ(s.kind, BuildKind::kL3);
  EXPECT_EQ(s.dispatches, 4u);
  const DistributedCompiledProgram p = DistributedCompiledProgram::from_dir(dir);
  EXPECT_EQ(p.world_size(), 4);
  EXPECT_EQ(p.meta().distributed_config.device_ids, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(p.host_orch().windows.size(), 2u);
  EXPECT_FALSE(fs::exists(dir / "kernel_config.json"));
  EXPECT_FALSE(fs::exists(dir / "compiled_meta.json"));
  // Sub-builds are byte-identical: they compile and ship once.
  const std::vector<std::string> files = {"kernel_config.json", "orchestration/chip_orch.cpp",
                                          "kernels/aiv/reduce_step.cpp", "ptoas/reduce_step.pto",
                                          "ptoas/reduce_step.cpp"};
  for (int r = 1; r < 4; ++r)
    for (const std::string& f : files)
      EXPECT_EQ(testing::read_text(dir / "next_levels" / std::to_string(r) / f),
                testing::read_text(dir / "next_levels/0" / f))
          << f << " of rank " << r;
  for (int r = 0; r < 4; ++r) {
    EXPECT_FALSE(fs::exists(dir / "next_levels" / std::to_string(r) / "golden"));
    EXPECT_FALSE(fs::exists(dir / "next_levels" / std::to_string(r) / "compiled_meta.json"));
  }
}

TEST(CodegenBuildTest, FreshCompileRemovesTheOtherKindsMarkers) {
  const fs::path dir = scratch("kinds");
  auto l2 = front_end(testdata("softmax.ptl"));
  write_build(dir, request_for(l2, 1, "softmax.ptl"), fake_lowering, std::nullopt);
  EXPECT_EQ(detect_build_kind(dir), BuildKind::kL2);
  auto l3 = front_end(testdata("reduce.ptl"), 2);
  write_build(dir, request_for(l3, 2, "reduce.ptl"), fake_lowering, std::nullopt);
  EXPECT_EQ(detect_build_kind(dir), BuildKind::kL3);
  EXPECT_NO_THROW(DistributedCompiledProgram::from_dir(dir));
  write_build(dir, request_for(l2, 1, "softmax.ptl"), fake_lowering, std::nullopt);
  EXPECT_EQ(detect_build_kind(dir), BuildKind::kL2);
  EXPECT_NO_THROW(CompiledProgram::from_dir(dir));
}

TEST(CodegenBuildTest, NoGoldenRemovesAStaleGolden) {
  auto run = front_end(testdata("softmax.ptl"));
  const fs::path dir = scratch("nogolden");
  write_build(dir, request_for(run, 1, "softmax.ptl"), fake_lowering,
              fake_golden(*run.result.entry));
  ASSERT_TRUE(fs::exists(dir / "golden/golden.json"));
  const BuildSummary s =
      write_build(dir, request_for(run, 1, "softmax.ptl"), fake_lowering, std::nullopt);
  EXPECT_FALSE(s.golden);
  EXPECT_FALSE(fs::exists(dir / "golden"));
  EXPECT_FALSE(CompiledProgram::from_dir(dir).golden().has_value());
}

TEST(CodegenBuildTest, GoldenFilesHoldTheGivenData) {
  auto run = front_end(testdata("softmax.ptl"));
  const fs::path dir = scratch("goldendata");
  GoldenData g = fake_golden(*run.result.entry);
  g.before[0].data_as<float>()[5] = 3.0f;
  g.after[1].data_as<float>()[7] = 0.25f;
  write_build(dir, request_for(run, 1, "softmax.ptl"), fake_lowering, g);
  EXPECT_EQ(read_npy(dir / "golden/inputs/x.npy").data_as<float>()[5], 3.0f);
  EXPECT_EQ(read_npy(dir / "golden/expected/y.npy").data_as<float>()[7], 0.25f);
  EXPECT_FALSE(fs::exists(dir / "golden/inputs/y.npy"));
  EXPECT_FALSE(fs::exists(dir / "golden/expected/x.npy"));
}

TEST(CodegenBuildTest, KernelsTakeTheNameOfTheWindowBoundToThem) {
  // Kernels find windows by name, so a window named other than the kernel's
  // parameter gets a copy of the kernel (and of the chip function on the way)
  // whose parameter carries the window's name; a matching binding needs none.
  auto run = front_end(R"(
kernel aiv k(a: in f32[1, 8], b: out f32[1, 8], w: window f32[1, 8]) {
  store(load(a, [0, 0], [1, 8]), w, [0, 0])
  store(load(w, [0, 0], [1, 8]), b, [0, 0])
}
chip c(a: in f32[1, 8], b: out f32[1, 8], w: window f32[1, 8]) { k(a, b, w) }
host main(x: in f32[WORLD, 1, 8], y: out f32[WORLD, 1, 8], z: out f32[WORLD, 1, 8]) {
  let buf = window_buffer(f32[1, 8])
  for r in 0 .. WORLD { c(x[r], y[r], buf) on r }
  let w = window_buffer(f32[1, 8])
  for r in 0 .. WORLD { c(x[r], z[r], w) on r }
}
)");
  const fs::path dir = scratch("winname");
  std::vector<std::string> lowered_params;
  auto lowering = [&](const Function& k) {
    for (const Param& p : k.params) lowered_params.push_back(k.name + "." + p.name);
    return fake_lowering(k);
  };
  write_build(dir, request_for(run, 2, "t.ptl"), lowering, std::nullopt);
  const HostOrch orch = HostOrch::load(dir);
  ASSERT_EQ(orch.dispatches.size(), 4u);
  EXPECT_EQ(orch.dispatches[0].program, "c_w1");
  EXPECT_EQ(orch.dispatches[2].program, "c");
  EXPECT_EQ(lowered_params, (std::vector<std::string>{"k_w1.a", "k_w1.b", "k_w1.buf", "k.a",
                                                      "k.b", "k.w"}));
}

TEST(CodegenBuildTest, HostTensorsBecomeIntermediatesOfTheHostPlan) {
  auto run = front_end(R"(
kernel aiv k(a: in f32[1, 8], b: out f32[1, 8]) { store(load(a, [0, 0], [1, 8]), b, [0, 0]) }
chip c(a: in f32[1, 8], b: out f32[1, 8]) { k(a, b) }
host step(x: in f32[WORLD, 1, 8], y: out f32[WORLD, 1, 8]) {
  let t = tensor(f32[WORLD, 1, 8])
  for r in 0 .. WORLD { c(x[r], t[r]) on r }
  for r in 0 .. WORLD { c(t[r], y[r]) on r }
}
host main(x: in f32[WORLD, 1, 8], y: out f32[WORLD, 1, 8], t: out f32[WORLD, 1, 8]) {
  step(x, t)
  step(t, y)
}
)");
  const fs::path dir = scratch("intermediates");
  write_build(dir, request_for(run, 2, "t.ptl"), fake_lowering, std::nullopt);
  const HostOrch orch = HostOrch::load(dir);
  // Named after their let, clear of the parameter t and of each other.
  ASSERT_EQ(orch.intermediates.size(), 2u);
  EXPECT_EQ(orch.intermediates[0].name, "t_1");
  EXPECT_EQ(orch.intermediates[1].name, "t_2");
  EXPECT_EQ(orch.intermediates[0].shape, (std::vector<int64_t>{2, 1, 8}));
  ASSERT_EQ(orch.dispatches.size(), 8u);
  EXPECT_EQ(orch.dispatches[0].args[1].param, "t_1");
  EXPECT_EQ(orch.dispatches[1].args[1].offsets, (std::vector<int64_t>{1, 0, 0}));
  EXPECT_EQ(orch.dispatches[2].args[0].param, "t_1");
  EXPECT_EQ(orch.dispatches[4].args[0].param, "t");
  EXPECT_EQ(orch.dispatches[4].args[1].param, "t_2");
  EXPECT_NO_THROW(DistributedCompiledProgram::from_dir(dir));
}

TEST(CodegenBuildTest, KernelWindowParametersMayTradeNames) {
  // x is bound to window y and y to window x: the copy must swap them, not
  // rename both to one name.
  auto run = front_end(R"(
kernel aiv k(a: in f32[1, 8], x: window f32[1, 8], y: window f32[1, 8]) {
  store(load(a, [0, 0], [1, 8]), x, [0, 0])
}
chip c(a: in f32[1, 8], x: window f32[1, 8], y: window f32[1, 8]) { k(a, y, x) }
host main(a: in f32[WORLD, 1, 8]) {
  let x = window_buffer(f32[1, 8])
  let y = window_buffer(f32[1, 8])
  for r in 0 .. WORLD { c(a[r], x, y) on r }
}
)");
  std::vector<std::string> lowered;
  auto lowering = [&](const Function& k) {
    std::string params;
    for (const Param& p : k.params) params += p.name + " ";
    lowered.push_back(k.name + ": " + params + dump(*k.body[0]));
    return fake_lowering(k);
  };
  write_build(scratch("winswap"), request_for(run, 2, "t.ptl"), lowering, std::nullopt);
  ASSERT_EQ(lowered.size(), 1u);
  // Parameter 2 (bound to window y) is now named y, and the store still goes to it.
  EXPECT_EQ(lowered[0].substr(0, lowered[0].find('(')), "k_w1: a y x ");
  EXPECT_EQ(lowered[0].substr(lowered[0].find('(')),
            "(call store (call load a (list 0 0) (list 1 8)) y (list 0 0))");
}

TEST(CodegenBuildTest, KernelCannotTakeAWindowNameItUsesForALocal) {
  auto run = front_end(R"(
kernel aiv k(a: in f32[1, 8], b: out f32[1, 8], w: window f32[1, 8]) {
  let buf = load(a, [0, 0], [1, 8])
  store(buf, b, [0, 0])
}
chip c(a: in f32[1, 8], b: out f32[1, 8], w: window f32[1, 8]) { k(a, b, w) }
host main(x: in f32[WORLD, 1, 8], y: out f32[WORLD, 1, 8]) {
  let buf = window_buffer(f32[1, 8])
  for r in 0 .. WORLD { c(x[r], y[r], buf) on r }
}
)");
  const fs::path dir = scratch("winclash");
  try {
    write_build(dir, request_for(run, 2, "t.ptl"), fake_lowering, std::nullopt);
    FAIL() << "expected a ProgramError";
  } catch (const ProgramError& e) {
    EXPECT_NE(std::string(e.what()).find("'buf' already names something else in 'k'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(dir));  // nothing written
}

TEST(CodegenBuildTest, ScalarEntryParameterIsRecordedWithItsDefault) {
  auto run = front_end(R"(
kernel aiv k(a: in f32[1, 8], b: out f32[1, 8]) { store(load(a, [0, 0], [1, 8]), b, [0, 0]) }
chip main(a: in f32[1, 8], b: out f32[1, 8], n: i32) { k(a, b) }
)");
  BuildRequest request = request_for(run, 1, "t.ptl");
  ScalarValue seven;
  seven.dtype = DType::kI32;
  seven.i = 7;
  request.scalars = {seven};
  const fs::path dir = scratch("scalar");
  write_build(dir, request, fake_lowering, std::nullopt);
  const CompiledMeta meta = CompiledMeta::load(dir);
  ASSERT_EQ(meta.scalars.size(), 1u);
  EXPECT_EQ(meta.scalars[0].name, "n");
  EXPECT_EQ(meta.scalars[0].dtype(), DType::kI32);
  EXPECT_EQ(meta.scalars[0].value.i, 7);
  EXPECT_EQ(meta.params.size(), 2u);
}

TEST(CodegenBuildTest, GoldenTolerances) {
  EXPECT_EQ(golden_tolerance({DType::kF32}), std::make_pair(1e-5, 1e-5));
  EXPECT_EQ(golden_tolerance({DType::kF32, DType::kF16}), std::make_pair(5e-3, 5e-3));
  EXPECT_EQ(golden_tolerance({DType::kBF16}), std::make_pair(3e-2, 3e-2));
  EXPECT_EQ(golden_tolerance({DType::kI32}), std::make_pair(0.0, 0.0));
}

}  // namespace
}  // namespace pypto::compiler
