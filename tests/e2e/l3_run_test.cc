// pypto-coord run / replay / exec on L3 builds, with the agents it launches
// itself (embedded) and with agents launched by the user's own mpirun
// (--agents external): outputs, validation, the dfx_outputs/rank<r>/d<k>/
// layout, report/run.json, shipping, and both data-plane paths.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/e2e/l3_util.h"

namespace pypto::e2e {
namespace {

using nlohmann::json;

json read_json(const fs::path& path) { return json::parse(slurp(path)); }

void expect_clean(const std::string& tag) {
  EXPECT_TRUE(survivors(tag).empty()) << "processes of the run were left behind";
}

TEST(L3RunTest, AllreduceAtWorld8ValidatesAndLaysOutDfxPerRankAndDispatch) {
  const fs::path dir = copy_fixture("l3/allreduce_w8", "l3_allreduce_w8");
  // A stale dispatch directory of an earlier run, and a user's file that must stay.
  fs::create_directories(dir / "dfx_outputs/rank9/d4");
  spit(dir / "dfx_outputs/notes.txt", "mine");
  const std::string tag = "allreduce_w8";
  const fs::path store = scratch_dir("store_allreduce_w8");

  CoordResult r = coord({"run", dir.string(), "--validate", "--swimlane", "1"}, l3_env(tag, store));
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "(L3, 8 ranks, a2a3sim): 8 dispatch(es)")) << r.out;
  EXPECT_TRUE(contains(r.out, "validation: passed (y: 2048 elements")) << r.out;

  // Every rank's row is the sum of every rank's input (PyPTO's quickstart).
  const Tensor y = read_npy(dir / "outputs/y.npy");
  const Tensor expected = read_npy(dir / "golden/expected/y.npy");
  EXPECT_EQ(f32_values(y), f32_values(expected));

  EXPECT_FALSE(fs::exists(dir / "dfx_outputs/rank9/d4"));
  EXPECT_TRUE(fs::exists(dir / "dfx_outputs/notes.txt"));
  for (int rank = 0; rank < 8; ++rank) {
    const fs::path d0 = dir / "dfx_outputs" / ("rank" + std::to_string(rank)) / "d0";
    const json meta = read_json(d0 / "dispatch_program.json");
    EXPECT_EQ(meta["program"], "chip_orch");
    EXPECT_EQ(meta["next_level"], "next_levels/" + std::to_string(rank));
    EXPECT_EQ(meta["rank"], rank);
    EXPECT_LE(meta["start_unix_ns"].get<int64_t>(), meta["end_unix_ns"].get<int64_t>());
    EXPECT_TRUE(fs::exists(d0 / "chip_swimlane_records.json")) << d0;
    EXPECT_FALSE(fs::exists(d0.parent_path() / "d1"));
  }

  const json report = read_json(dir / "report/run.json");
  EXPECT_EQ(report["result"], "PASS");
  EXPECT_EQ(report["world"], 8);
  ASSERT_EQ(report["ranks"].size(), 8u);
  EXPECT_GT(report["bytes_shipped"].get<uint64_t>(), 0u);
  // Identical per-rank sources cross the link once per host: each file's bytes once.
  uint64_t rank0_bytes = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir / "next_levels/0"))
    if (entry.is_regular_file()) rank0_bytes += entry.file_size();
  EXPECT_EQ(report["bytes_shipped"].get<uint64_t>(), rank0_bytes);
  EXPECT_EQ(report["ranks"][3]["dispatches"].size(), 1u);
  expect_clean(tag);

  // Unchanged build, same stores: nothing is shipped and nothing compiles.
  r = coord({"run", dir.string(), "--validate"}, l3_env(tag, store));
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "(0 bytes shipped, 0 compile(s)")) << r.out;
  EXPECT_EQ(read_json(dir / "report/run.json")["bytes_shipped"], 0);
  expect_clean(tag);

  // inspect looks in the store those agents compiled into, and shows the 8
  // identical ranks once (--json keeps one entry per rank).
  r = coord({"inspect", dir.string()}, l3_env(tag, store));
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "  binary store " + (store / "bin").string() +
                                  " (this host's rank agents compile into it"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "  ranks 0-7 (next_levels/0 … next_levels/7): runs chip_orch\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "kernels/aiv/reduce_step.cpp  [In, Out, Window, Window]  cache fresh"))
      << r.out;
  EXPECT_FALSE(contains(r.out, "cache missing")) << r.out;
  EXPECT_FALSE(contains(r.out, "  rank 1 ")) << r.out;
  r = coord({"inspect", "--json", dir.string(), "--binary-store", (store / "none").string()});
  ASSERT_EQ(r.exit_code, 0) << r.all();
  const json described = json::parse(r.out);
  EXPECT_EQ(described["binary_store"], (store / "none").string());
  ASSERT_EQ(described["ranks"].size(), 8u);
  EXPECT_EQ(described["ranks"][7]["kernels"][0]["cache"], "missing");
}

// The allreduce (notify/wait + remote_load) at world 2 and 8, a ring shift (put +
// notify), MPMD (rank 0 runs another program), a build whose rank 3 kernel was
// hand-edited, and windows that accumulate, each on both data paths.
class L3FixtureTest : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(L3FixtureTest, RunsAndValidates) {
  const auto& [fixture, comm] = GetParam();
  const std::string name = fs::path(fixture).filename().string() + "_" + comm;
  const fs::path dir = copy_fixture(fixture, "l3_" + name);
  std::vector<std::string> env = l3_env(name);
  env.push_back("PYPTO_COMM=" + comm);
  CoordResult r = coord({"run", dir.string(), "--validate"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "validation: passed")) << r.out;
  expect_clean(name);
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, L3FixtureTest,
    ::testing::Combine(::testing::Values("l3/allreduce_w2", "l3/allreduce_w8", "l3/ring_shift_w8",
                                         "l3/mpmd_w8", "l3/allreduce_w8_edited",
                                         "l3/accumulate_w2"),
                       ::testing::Values("shm", "rma")),
    [](const auto& info) {
      std::string name = fs::path(std::get<0>(info.param)).filename().string() + "_" +
                         std::get<1>(info.param);
      return name;
    });

TEST(L3RunTest, ExecPrintsEveryRanksDevice) {
  const fs::path dir = copy_fixture("l3/allreduce_w2", "l3_exec");
  CoordResult r = coord({"exec", dir.string()}, l3_env("exec"));
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_EQ(r.out, "PYPTO_EXEC_RESULT=PASS device=0,1\n");
}

TEST(L3RunTest, ReplayPicksUpAHandEditOfOneRanksKernel) {
  const fs::path dir = copy_fixture("l3/allreduce_w2", "l3_replay_edit");
  const std::string tag = "replay_edit";
  CoordResult r = coord({"run", dir.string(), "--validate"}, l3_env(tag));
  ASSERT_EQ(r.exit_code, 0) << r.all();

  // Rank 1's kernel now doubles its output: only rank 1's row differs.
  const fs::path kernel = dir / "next_levels/1/kernels/aiv/reduce_step.cpp";
  std::string source = slurp(kernel);
  const std::string sentinel = "// --- Kernel entry point ---";
  ASSERT_TRUE(contains(source, sentinel));
  source += "\n// hand edit (debugging): see the replay test\n";
  spit(kernel, source);
  r = coord({"replay", dir.string(), "--validate"}, l3_env(tag));
  ASSERT_EQ(r.exit_code, 0) << r.all();  // an edit that keeps the result still validates
  EXPECT_TRUE(contains(r.out, "cache: invalidated 0 cached binaries in the build directory; the "
                              "rank agents reuse their host store's binaries of unchanged sources "
                              "and compile the sources that changed\n"))
      << r.out;
  EXPECT_FALSE(contains(r.out, "every source is compiled again")) << r.out;
  EXPECT_GE(read_json(dir / "report/run.json")["ranks"][1]["compiles"].get<int>(), 1);
  EXPECT_EQ(read_json(dir / "report/run.json")["ranks"][0]["compiles"].get<int>(), 0);
  expect_clean(tag);
}

// mpirun -n 8 pypto-rank --coord ..., launched by the user, serving a waiting coordinator.
class L3ExternalTest : public ::testing::TestWithParam<std::string> {};

TEST_P(L3ExternalTest, AgentsLaunchedByTheUsersMpirunRunAndValidate) {
  const std::string fixture = GetParam();
  const std::string name = "external_" + fs::path(fixture).filename().string();
  const fs::path dir = copy_fixture(fixture, name);
  const int port = free_tcp_port();
  ASSERT_GT(port, 0);
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(port);
  Background coordinator = start_background(
      {kCoordBin.string(), "run", dir.string(), "--validate", "--agents", "external", "--bind",
       endpoint, "--startup-timeout", "60"},
      l3_env(name), name);
  const int world = json::parse(slurp(dir / "distributed_meta.json"))["world_size"];
  // The command it prints carries the run's key in the environment, not the argv.
  const std::string key = printed_run_key(coordinator);
  ASSERT_EQ(key.size(), 80u) << coordinator.stderr_text();
  EXPECT_TRUE(contains(coordinator.stderr_text(), "' mpirun -x PYPTO_RUN_KEY -n " +
                                                      std::to_string(world) +
                                                      " pypto-rank --coord " + endpoint))
      << coordinator.stderr_text();
  std::vector<std::string> env = l3_env(name);
  env.push_back("PYPTO_RUN_KEY=" + key);
  CoordResult agents = run_split(
      {kMpirun.string(), "--allow-run-as-root", "--oversubscribe", "-x", "PYPTO_RUN_KEY", "-n",
       std::to_string(world), kRankBin.string(), "--coord", endpoint},
      env);
  EXPECT_EQ(agents.exit_code, 0) << agents.all();
  const auto status = coordinator.job.wait_for(std::chrono::seconds(60));
  ASSERT_TRUE(status);
  EXPECT_EQ(status->code, 0) << coordinator.stdout_text() << coordinator.stderr_text();
  EXPECT_TRUE(contains(coordinator.stdout_text(), "validation: passed"));
  expect_clean(name);
}

INSTANTIATE_TEST_SUITE_P(World8, L3ExternalTest,
                         ::testing::Values("l3/allreduce_w8", "l3/ring_shift_w8", "l3/mpmd_w8"),
                         [](const auto& info) { return fs::path(info.param).filename().string(); });

TEST(L3RunTest, BenchPreparesOnceAndTimesEveryRound) {
  const fs::path dir = copy_fixture("l3/allreduce_w2", "l3_bench");
  CoordResult r = coord({"bench", dir.string(), "--rounds", "5", "--warmup", "1", "--json"},
                        l3_env("bench"));
  ASSERT_EQ(r.exit_code, 0) << r.all();
  const json stats = json::parse(r.out);
  EXPECT_EQ(stats["rounds"], 5);
  EXPECT_EQ(stats["program"], "main (L3, 2 ranks)");
  EXPECT_LE(stats["min_ms"].get<double>(), stats["median_ms"].get<double>());
  EXPECT_LE(stats["median_ms"].get<double>(), stats["max_ms"].get<double>());
  expect_clean("bench");

  const fs::path l2 = copy_fixture("l2/vector_add", "l2_bench");
  r = coord({"bench", l2.string(), "--rounds", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "vector_add (L2): prepared in")) << r.out;
  EXPECT_TRUE(contains(r.out, "3 round(s): min")) << r.out;
  r = coord({"bench", l2.string(), "--rounds", "3", "--resident"});
  EXPECT_EQ(r.exit_code, 2) << r.all();
  EXPECT_TRUE(contains(r.err, "--resident is for L3 builds")) << r.all();
}

TEST(L3RunTest, BenchResidentUploadsOnceAndSaysWhatStayedInTheAgents) {
  const fs::path dir = copy_fixture("l3/allreduce_w2", "l3_bench_resident");
  CoordResult r = coord({"bench", dir.string(), "--rounds", "4", "--warmup", "1", "--resident"},
                        l3_env("bench_resident"));
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "main (L3, 2 ranks): prepared in")) << r.out;
  EXPECT_TRUE(contains(r.out, "resident: x, y (uploaded once in ")) << r.out;
  EXPECT_TRUE(contains(r.out, ", downloaded once in ")) << r.out;
  EXPECT_FALSE(contains(r.out, "shipped every round")) << r.out;

  r = coord({"bench", dir.string(), "--rounds", "2", "--warmup", "0", "--resident", "--json"},
            l3_env("bench_resident"));
  ASSERT_EQ(r.exit_code, 0) << r.all();
  const json stats = json::parse(r.out);
  EXPECT_EQ(stats["resident"], json::array({"x", "y"}));
  EXPECT_TRUE(stats["host_params"].empty());
  EXPECT_GE(stats["upload_ms"].get<double>(), 0.0);
  EXPECT_EQ(stats["rounds"], 2);
  expect_clean("bench_resident");
}

}  // namespace
}  // namespace pypto::e2e
