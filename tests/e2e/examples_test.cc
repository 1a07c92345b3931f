// Every program of examples/ compiles with the real pypto-compile, runs under
// the real pypto-coord (8 or 2 rank agents under mpirun for the L3 ones) and
// validates against the golden data of the reference interpreter.
#include <string>
#include <tuple>

#include "tests/e2e/l3_util.h"

namespace pypto::e2e {
namespace {

CoordResult compile(const std::string& example, const fs::path& out,
                    std::optional<int> world = std::nullopt) {
  return pypto_compile(kExamples / example, out, world);
}

class ExampleTest : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(ExampleTest, CompilesRunsAndValidates) {
  const auto& [example, world] = GetParam();
  const std::string name = fs::path(example).stem().string() + "_w" + std::to_string(world);
  const fs::path dir = scratch_dir("example_" + name);
  CoordResult c = compile(example, dir, world);
  ASSERT_EQ(c.exit_code, 0) << c.all();
  EXPECT_TRUE(contains(c.out, "wrote L3 build")) << c.out;

  CoordResult r = coord({"run", dir.string(), "--validate"}, l3_env(name));
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "validation: passed")) << r.out;
  // Every rank ran every dispatch of the plan, and left its DFX behind.
  for (int rank = 0; rank < world; ++rank)
    EXPECT_TRUE(fs::exists(dir / ("dfx_outputs/rank" + std::to_string(rank)) /
                           "d0/dispatch_program.json"))
        << "rank " << rank;
  EXPECT_TRUE(survivors(name).empty()) << "processes of the run were left behind";
}

INSTANTIATE_TEST_SUITE_P(
    L3, ExampleTest,
    ::testing::Combine(::testing::Values("allreduce.ptl", "tp_linear.ptl", "row_parallel.ptl",
                                         "moe_all_to_all.ptl", "ring_allreduce.ptl"),
                       ::testing::Values(2, 8)),
    [](const auto& info) {
      return fs::path(std::get<0>(info.param)).stem().string() + "_w" +
             std::to_string(std::get<1>(info.param));
    });

TEST(ExampleL2Test, InspectListsTheHostIntermediatesOfTpLinear) {
  const fs::path dir = scratch_dir("example_inspect_tp_linear");
  CoordResult c = compile("tp_linear.ptl", dir, 2);
  ASSERT_EQ(c.exit_code, 0) << c.all();
  CoordResult r = coord({"inspect", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "  host intermediates (zeroed per run)\n    y_shard: f32[2, 64, 32]\n"))
      << r.out;
}

TEST(ExampleL2Test, SoftmaxOnOneChipCompilesRunsAndValidates) {
  const fs::path dir = scratch_dir("example_softmax");
  CoordResult c = compile("softmax.ptl", dir);
  ASSERT_EQ(c.exit_code, 0) << c.all();
  EXPECT_TRUE(contains(c.out, "wrote L2 build")) << c.out;
  CoordResult r = coord({"run", dir.string(), "--validate"});
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "validation: passed")) << r.out;
}

}  // namespace
}  // namespace pypto::e2e
