// lower_kernel: checked kernels -> .pto listings and C++ bodies (golden
// texts), and unsupported constructs -> ProgramError with file:line:col.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "compiler/codegen/kernel_lowering.h"
#include "compiler/pto/pto_test_util.h"
#include "compiler/test_util.h"
#include "pypto/error.h"

namespace pypto::compiler {
namespace {

using testing::lower_file;
using testing::lower_source;
using testing::read_testdata;

// Golden files live in compiler/testdata/pto/<name>.pto|.cpp. With
// PYPTO_UPDATE_GOLDEN=1 the test rewrites them instead of comparing.
void expect_golden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(PYPTO_COMPILER_TESTDATA) + "/pto/" + name;
  if (std::getenv("PYPTO_UPDATE_GOLDEN")) {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  EXPECT_EQ(read_testdata("pto/" + name), actual) << "golden file " << path
                                                   << " (PYPTO_UPDATE_GOLDEN=1 rewrites it)";
}

TEST(LowerKernelTest, VectorAddGolden) {
  const LoweredKernel k = lower_source(
      "kernel aiv vadd(a: in f32[4, 64], b: in f32[4, 64], c: out f32[4, 64]) {\n"
      "  store(add(load(a, [0, 0], [4, 64]), load(b, [0, 0], [4, 64])), c, [0, 0])\n"
      "}\n"
      "chip main(a: in f32[4, 64], b: in f32[4, 64], c: out f32[4, 64]) { vadd(a, b, c) }\n",
      "vadd");
  EXPECT_EQ(k.unit, "vadd");
  EXPECT_EQ(k.pto,
            ".kernel vadd aiv\n"
            ".source \"t.ptl\"\n"
            ".tensor a in f32[4, 64]\n"
            ".tensor b in f32[4, 64]\n"
            ".tensor c out f32[4, 64]\n"
            "  .loc 2\n"
            "  %t0:f32[4, 64] = tload a[0, 0]\n"
            "  %t1:f32[4, 64] = tload b[0, 0]\n"
            "  %t0:f32[4, 64] = tadd %t0, %t1\n"
            "  tstore %t0, c[0, 0]\n"
            ".end\n");
  expect_golden("vadd.cpp", k.cpp_body);
}

TEST(LowerKernelTest, ReduceStepGolden) {
  const LoweredKernel k = lower_file("reduce.ptl", "reduce_step", 2);
  expect_golden("reduce_step.pto", k.pto);
  expect_golden("reduce_step.cpp", k.cpp_body);
}

TEST(LowerKernelTest, SoftmaxGolden) {
  const LoweredKernel k = lower_file("softmax.ptl", "softmax_rows", std::nullopt);
  expect_golden("softmax_rows.pto", k.pto);
  expect_golden("softmax_rows.cpp", k.cpp_body);
}

TEST(LowerKernelTest, MatmulGolden) {
  const LoweredKernel k = lower_source(
      "const K = 256\n"
      "kernel aic mm(a: in f32[64, K], b: in f32[K, 32], c: out f32[64, 32]) {\n"
      "  let acc = zeros(f32[64, 32])\n"
      "  for k in 0 .. K step 64 {\n"
      "    acc = matmul(load(a, [0, k], [64, 64]), load(b, [k, 0], [64, 32]), acc)\n"
      "  }\n"
      "  store(acc, c, [0, 0])\n"
      "}\n"
      "chip main(a: in f32[64, K], b: in f32[K, 32], c: out f32[64, 32]) { mm(a, b, c) }\n",
      "mm");
  expect_golden("mm.pto", k.pto);
  expect_golden("mm.cpp", k.cpp_body);
}

TEST(LowerKernelTest, ScalarsControlFlowAndViews) {
  const LoweredKernel k = lower_source(testing::kScaleProgram, "scale");
  expect_golden("scale.pto", k.pto);
}

TEST(LowerKernelTest, UnsupportedConstructNamesItsPlace) {
  try {
    lower_source(
        "kernel aiv h(x: in f16[4, 16], y: out f16[4, 16], s: f16) {\n"
        "  store(mul(load(x, [0, 0], [4, 16]), s), y, [0, 0])\n"
        "}\n"
        "chip main(x: in f16[4, 16], y: out f16[4, 16]) { h(x, y, 1.5) }\n",
        "h");
    FAIL() << "expected a ProgramError";
  } catch (const ProgramError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("t.ptl:1:54: error: a f16 scalar parameter is not supported by the kernel "
                     "lowering yet"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("^~~"), std::string::npos) << m;
  }
}

TEST(LowerKernelTest, NonKernelIsRejected) {
  EXPECT_THROW(lower_source("chip main(a: in f32[4]) { }\n", "main"), ProgramError);
}

TEST(LowerKernelTest, HalfMatmulGolden) {
  const LoweredKernel k = lower_file("matmul_colshard.ptl", "mm_tile", 2);
  expect_golden("mm_tile.pto", k.pto);
}

// Mutations of the example programs that still pass the checker lower every
// kernel, or fail with a ProgramError that is not an internal error.
TEST(LowerKernelTest, FuzzedProgramsLowerOrReportUnsupported) {
  std::mt19937 rng(99);
  const std::string programs[] = {read_testdata("reduce.ptl"), read_testdata("softmax.ptl"),
                                  read_testdata("matmul_colshard.ptl")};
  const char* snippets[] = {"1", "2", "0", "rank()", "n", "me", "+ 1", "* 2", "- 1", "%", "/",
                            "f32", "i32", "[0, 0]", "16", "max(1, 2)", "!", "-", "(", ")", ","};
  int lowered = 0;
  for (int i = 0; i < 1500; ++i) {
    std::string s = programs[i % 3];
    const size_t pos = rng() % s.size();
    if (rng() % 2) {
      s.insert(pos, snippets[rng() % (sizeof snippets / sizeof *snippets)]);
    } else {
      s.erase(pos, 1 + rng() % 3);
    }
    SourceManager sources;
    DiagnosticEngine diags(sources);
    LoadOptions load;
    load.read = [&s](const std::string& path) -> std::optional<std::string> {
      if (path == "t.ptl") return s;
      return std::nullopt;
    };
    Program program = load_program("t.ptl", load, sources, diags);
    if (diags.has_errors()) continue;
    CheckOptions co;
    co.world = 2;
    CheckResult cr = check(program, co, diags);
    if (diags.has_errors()) continue;
    for (const Module& m : program.modules)
      for (const Function& f : m.functions) {
        if (f.kind != FuncKind::kKernel) continue;
        LowerOptions lo;
        lo.world = cr.world;
        lo.sources = &sources;
        try {
          lower_kernel(f, lo);
          ++lowered;
        } catch (const ProgramError& e) {
          EXPECT_EQ(std::string(e.what()).find("internal error"), std::string::npos)
              << e.what() << "\nprogram:\n" << s;
        } catch (const std::exception& e) {
          ADD_FAILURE() << "exception " << e.what() << " on:\n" << s;
        }
      }
  }
  EXPECT_GT(lowered, 100);
}

}  // namespace
}  // namespace pypto::compiler
