// Every program of examples/ compiles with the real pypto-compile, runs under
// the real pypto-coord (8 or 2 rank agents under mpirun for the L3 ones) and
// validates against the golden data of the reference interpreter.
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>

#include "pypto/npy.h"
#include "tests/e2e/chromium_render.h"
#include "tests/e2e/l3_util.h"
#include "tests/e2e/trace_format.h"

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

  // At world 8 with the timeline and the dependency arrows (docs/dfx.md).
  std::vector<std::string> args = {"run", dir.string(), "--validate"};
  if (world == 8) args.insert(args.end(), {"--swimlane", "--dep-gen"});
  CoordResult r = coord(args, l3_env(name));
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "validation: passed")) << r.out;
  // Every rank ran every dispatch of the plan, and left its DFX behind.
  for (int rank = 0; rank < world; ++rank)
    EXPECT_TRUE(fs::exists(dir / ("dfx_outputs/rank" + std::to_string(rank)) /
                           "d0/dispatch_program.json"))
        << "rank " << rank;
  EXPECT_TRUE(survivors(name).empty()) << "processes of the run were left behind";
  if (world != 8) return;

  // The timeline: in the trace-event format, one process per rank, and every
  // arrow between ranks from one rank to another.
  const nlohmann::json trace = nlohmann::json::parse(slurp(dir / "dfx_outputs/timeline.json"));
  const std::vector<std::string> problems = trace_format_problems(trace);
  EXPECT_TRUE(problems.empty()) << problems.size() << " problem(s), the first: " << problems[0];
  std::set<int> processes;
  size_t comm_flows = 0, waits = 0;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") processes.insert(e["pid"].get<int>());
    comm_flows += e["ph"] == "s" && e.value("cat", "") == "comm";
    waits += e["ph"] == "X" && e.value("cat", "") == "wait";
  }
  EXPECT_EQ(processes.size(), 8u);
  if (waits > 0) EXPECT_GT(comm_flows, 0u) << "waits but no notify -> wait arrow";
  // The report renders in Chromium without a console message.
  if (fs::exists(kChromium)) {
    const Rendering page = render(dir / "report/run.html", "example_" + name);
    EXPECT_EQ(page.exit_code, 0) << page.log;
    EXPECT_FALSE(contains(page.log, ":CONSOLE")) << page.log;
    EXPECT_GT(page.png_bytes, 20000u) << page.log;
  }
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

TEST(ExampleScalarsTest, AxpbRunsOnOneChipWithItsDefaultsAndWithScalarFlags) {
  const fs::path dir = scratch_dir("example_axpb");
  CoordResult c = run_split({PYPTO_COMPILE_BIN, (kExamples / "axpb.ptl").string(), "-o",
                                               dir.string(), "--scalar", "alpha=2.5",
                                               "--scalar", "b=0.1"});
  ASSERT_EQ(c.exit_code, 0) << c.all();
  // inspect lists the scalar parameters beside the tensors, with their defaults.
  CoordResult r = coord({"inspect", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "    x: In f32[16, 256]\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "    alpha: scalar f32, default 2.5 (run --scalar alpha=VALUE)\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "    b: scalar f32, default 0.1 (run --scalar b=VALUE)\n")) << r.out;
  r = coord({"run", dir.string(), "--validate"});
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "scalars: alpha=2.5, b=0.1\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "validation: passed")) << r.out;

  // Another alpha: golden/expected no longer applies, and the run says so.
  r = coord({"run", dir.string(), "--scalar", "alpha=0.5", "--validate"});
  EXPECT_EQ(r.exit_code, 2) << r.all();
  EXPECT_TRUE(contains(r.err, "--scalar alpha=0.5 differs from the 2.5 golden/ was computed with"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "--expected y=FILE.npy")) << r.err;

  // Run it without --validate, then validate a second run against those outputs.
  r = coord({"run", dir.string(), "--scalar", "alpha=0.5", "--output-dir",
             (dir / "half").string()});
  ASSERT_EQ(r.exit_code, 0) << r.all();
  const Tensor x = read_npy(dir / "golden/inputs/x.npy");
  const Tensor y = read_npy(dir / "half/y.npy");
  const auto* xs = static_cast<const float*>(x.data());
  const auto* ys = static_cast<const float*>(y.data());
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(ys[i], xs[i] * 0.5f + 0.1f) << i;
  r = coord({"run", dir.string(), "--scalar", "alpha=0.5", "--validate", "--expected",
             "y=" + (dir / "half/y.npy").string()});
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "validation: passed")) << r.out;

  r = coord({"run", dir.string(), "--scalar", "alpha=big"});
  EXPECT_EQ(r.exit_code, 2) << r.all();
  EXPECT_TRUE(contains(r.err, "--scalar alpha=big: 'big' is not a number")) << r.err;
}

TEST(ExampleScalarsTest, AxpbWorldRunsOnTwoRanksWithHostScalars) {
  const fs::path dir = scratch_dir("example_axpb_world");
  CoordResult c = run_split({PYPTO_COMPILE_BIN, (kExamples / "axpb_world.ptl").string(), "-o",
                                               dir.string(), "--world", "2", "--scalar",
                                               "alpha=-1.5"});
  ASSERT_EQ(c.exit_code, 0) << c.all();
  CoordResult r = coord({"inspect", "--json", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.all();
  const nlohmann::json described = nlohmann::json::parse(r.out);
  ASSERT_EQ(described["scalars"].size(), 2u) << r.out;
  EXPECT_EQ(described["scalars"][0]["name"], "alpha");
  EXPECT_EQ(described["scalars"][0]["dtype"], "f32");
  EXPECT_EQ(described["scalars"][0]["value"], -1.5);
  r = coord({"run", dir.string(), "--validate"}, l3_env("axpb_world"));
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "validation: passed")) << r.out;
  // A different b reaches every rank.
  r = coord({"run", dir.string(), "--scalar", "b=4", "--output-dir", (dir / "b4").string()},
            l3_env("axpb_world"));
  ASSERT_EQ(r.exit_code, 0) << r.all();
  const Tensor x = read_npy(dir / "golden/inputs/x.npy");
  const Tensor y = read_npy(dir / "b4/y.npy");
  const auto* xs = static_cast<const float*>(x.data());
  const auto* ys = static_cast<const float*>(y.data());
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(ys[i], xs[i] * -1.5f + 4.0f) << i;
  EXPECT_TRUE(survivors("axpb_world").empty());
}

TEST(ExampleScalarsTest, ValidateRefusesGoldenDataMadeFromOtherInputs) {
  const fs::path dir = scratch_dir("example_axpb_input");
  CoordResult c = run_split({PYPTO_COMPILE_BIN, (kExamples / "axpb.ptl").string(), "-o",
                                               dir.string()});
  ASSERT_EQ(c.exit_code, 0) << c.all();
  Tensor mine = read_npy(dir / "golden/inputs/x.npy");
  static_cast<float*>(mine.data())[0] += 1.0f;
  write_npy(dir / "mine.npy", mine);
  CoordResult r = coord({"run", dir.string(), "--input", "x=" + (dir / "mine.npy").string(),
                         "--validate"});
  EXPECT_EQ(r.exit_code, 2) << r.all();
  EXPECT_TRUE(contains(r.err, "differs from golden/inputs/x.npy")) << r.err;
  // The same data as golden/inputs validates.
  r = coord({"run", dir.string(), "--input",
             "x=" + (dir / "golden/inputs/x.npy").string(), "--validate"});
  EXPECT_EQ(r.exit_code, 0) << r.all();
}

}  // namespace
}  // namespace pypto::e2e
