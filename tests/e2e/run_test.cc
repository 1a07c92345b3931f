// pypto-coord run on the L2 fixtures, run as the real binary.
#include <nlohmann/json.hpp>

#include "tests/e2e/e2e_util.h"

namespace pypto::e2e {
namespace {

// The test binary's one cleanup of its scratch (tests/e2e/e2e_util.h).
[[maybe_unused]] ::testing::Environment* const kCleanup =
    ::testing::AddGlobalTestEnvironment(new ScratchCleanup);

TEST(RunCommandTest, ValidatesEveryL2FixtureWithGolden) {
  int fixtures = 0;
  for (const auto& entry : fs::directory_iterator(kFixtures / "l2")) {
    if (!fs::is_directory(entry.path() / "golden")) continue;
    ++fixtures;
    const std::string rel = "l2/" + entry.path().filename().string();
    SCOPED_TRACE(rel);
    fs::path dir = copy_fixture(rel, "all_" + entry.path().filename().string());
    CoordResult r = coord({"run", dir.string(), "--validate"});
    ASSERT_EQ(r.exit_code, 0) << r.all();
    EXPECT_TRUE(contains(r.out, "validation: passed")) << r.all();
    keep_warm_cache(rel, dir);
    auto golden = nlohmann::json::parse(slurp(dir / "golden/golden.json"));
    for (const auto& name : golden["outputs"]) {
      const fs::path out = dir / "outputs" / (name.get<std::string>() + ".npy");
      EXPECT_TRUE(contains(r.out, out.string())) << r.all();
      Tensor actual = read_npy(out);
      Tensor expected = read_npy(dir / "golden/expected" / (name.get<std::string>() + ".npy"));
      EXPECT_EQ(actual.shape(), expected.shape());
    }
  }
  EXPECT_GE(fixtures, 2);  // vector_add and fanout_fanin at least
}

TEST(RunCommandTest, WritesEveryOutParameterAndTheIntermediates) {
  fs::path dir = warm_copy("l2/fanout_fanin", "intermediates");
  CoordResult r = coord({"run", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "fanout_fanin (L2, a2a3sim): 4 task(s)")) << r.all();
  const std::pair<const char*, float> expected[] = {{"s", 5}, {"t1", 6}, {"t2", 7}, {"f", 42}};
  for (const auto& [name, value] : expected) {
    Tensor t = read_npy(dir / "outputs" / (std::string(name) + ".npy"));
    EXPECT_EQ(t.shape(), (Shape{4, 64})) << name;
    for (float v : f32_values(t)) ASSERT_EQ(v, value) << name;
  }
  EXPECT_FALSE(fs::exists(dir / "dfx_outputs"));  // no DFX switch, no DFX directory
}

TEST(RunCommandTest, OutputDirFlag) {
  fs::path dir = warm_copy("l2/vector_add", "output_dir");
  const fs::path out = dir.parent_path() / "elsewhere";
  CoordResult r = coord({"run", dir.string(), "--output-dir", out.string(), "--validate"});
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(fs::exists(out / "c.npy"));
  EXPECT_FALSE(fs::exists(dir / "outputs"));
}

TEST(RunCommandTest, InputOverrideReplacesGoldenInput) {
  fs::path dir = warm_copy("l2/fanout_fanin", "input_override");
  const fs::path ones = dir.parent_path() / "ones.npy";
  write_npy(ones, f32_filled({4, 64}, 1.0f));
  CoordResult r = coord({"run", dir.string(), "--input", "a=" + ones.string()});
  ASSERT_EQ(r.exit_code, 0) << r.all();
  for (float v : f32_values(read_npy(dir / "outputs/f.npy"))) ASSERT_EQ(v, 30.0f);  // 5 * 6

  // golden/expected was computed from other inputs: --validate refuses to compare with it...
  r = coord({"run", dir.string(), "--input", "a=" + ones.string(), "--validate"});
  EXPECT_EQ(r.exit_code, 2) << r.all();
  EXPECT_TRUE(contains(r.err, "differs from golden/inputs/a.npy")) << r.all();
  EXPECT_TRUE(contains(r.err, "--expected f=FILE.npy")) << r.all();
  // ...and validates against expected outputs given with --expected.
  const fs::path thirty = dir.parent_path() / "thirty.npy";
  write_npy(thirty, f32_filled({4, 64}, 30.0f));
  r = coord({"run", dir.string(), "--input", "a=" + ones.string(), "--validate", "--expected",
             "f=" + thirty.string()});
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "validation: passed")) << r.all();
  write_npy(thirty, f32_filled({4, 64}, 31.0f));
  r = coord({"run", dir.string(), "--input", "a=" + ones.string(), "--validate", "--expected",
             "f=" + thirty.string()});
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_TRUE(contains(r.err, "output 'f': 256 of 256 elements differ")) << r.all();
}

TEST(RunCommandTest, InputOverrideErrorsNameParameterFileAndExpectation) {
  fs::path dir = copy_fixture("l2/fanout_fanin", "input_errors");  // nothing here compiles
  const fs::path small = dir.parent_path() / "small.npy";
  write_npy(small, f32_filled({4, 32}, 1.0f));
  const fs::path junk = dir.parent_path() / "junk.npy";
  spit(junk, "not a numpy file");

  CoordResult r = coord({"run", dir.string(), "--input", "zz=" + small.string()});
  EXPECT_EQ(r.exit_code, 2) << r.all();
  EXPECT_TRUE(contains(r.err, "has no parameter 'zz'; its inputs are a, b")) << r.all();

  r = coord({"run", dir.string(), "--input", "f=" + small.string()});
  EXPECT_EQ(r.exit_code, 2) << r.all();
  EXPECT_TRUE(contains(r.err, "'f' is an Out parameter")) << r.all();

  r = coord({"run", dir.string(), "--input", "a" + small.string()});
  EXPECT_EQ(r.exit_code, 2) << r.all();
  EXPECT_TRUE(contains(r.err, "expected NAME=FILE.npy")) << r.all();

  r = coord({"run", dir.string(), "--input", "a=" + small.string()});
  EXPECT_EQ(r.exit_code, 2) << r.all();
  EXPECT_TRUE(contains(r.err, "input 'a' (--input a=" + small.string() + ")")) << r.all();
  EXPECT_TRUE(contains(r.err, "holds f32[4, 32], but parameter 'a' is f32[4, 64]")) << r.all();

  r = coord({"run", dir.string(), "--input", "b=" + (dir / "nope.npy").string()});
  EXPECT_EQ(r.exit_code, 3) << r.all();
  EXPECT_TRUE(contains(r.err, "input 'b'")) << r.all();
  EXPECT_TRUE(contains(r.err, "nope.npy does not exist")) << r.all();

  r = coord({"run", dir.string(), "--input", "b=" + junk.string()});
  EXPECT_EQ(r.exit_code, 3) << r.all();
  EXPECT_TRUE(contains(r.err, "input 'b'")) << r.all();
  EXPECT_TRUE(contains(r.err, junk.string())) << r.all();

  r = coord({"run", dir.string(), "--input", "a=" + small.string(), "--input",
             "a=" + small.string()});
  EXPECT_EQ(r.exit_code, 2) << r.all();
  EXPECT_TRUE(contains(r.err, "--input a is given twice")) << r.all();
}

TEST(RunCommandTest, ValidationMismatchNamesOutputIndexAndValues) {
  fs::path dir = warm_copy("l2/fanout_fanin", "mismatch");
  Tensor expected = read_npy(dir / "golden/expected/f.npy");
  expected.data_as<float>()[2 * 64 + 17] = 43.5f;
  expected.data_as<float>()[3 * 64 + 1] = 41.0f;
  write_npy(dir / "golden/expected/f.npy", expected);

  CoordResult r = coord({"run", dir.string(), "--validate"});
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_TRUE(contains(r.err, "output 'f': 2 of 256 elements differ")) << r.all();
  EXPECT_TRUE(contains(r.err, "first at [2, 17] (flat 145): expected 43.5, actual 42")) << r.all();
  EXPECT_TRUE(contains(r.out, "validation: FAILED")) << r.all();
  // Outputs are written also when validation fails.
  for (const char* name : {"f", "s", "t1", "t2"})
    EXPECT_TRUE(fs::exists(dir / "outputs" / (std::string(name) + ".npy"))) << name;
}

TEST(RunCommandTest, WithoutGoldenNeedsInputsAndCannotValidate) {
  fs::path dir = warm_copy("l2/vector_add", "no_golden");
  const fs::path inputs = dir.parent_path() / "inputs";
  fs::copy(dir / "golden/inputs", inputs);
  fs::remove_all(dir / "golden");

  CoordResult r = coord({"run", dir.string(), "--validate"});
  EXPECT_EQ(r.exit_code, 2) << r.all();
  EXPECT_TRUE(contains(r.err, "has no golden/; run without --validate, or pass inputs with "
                              "--input NAME=FILE.npy"))
      << r.all();

  r = coord({"run", dir.string()});
  EXPECT_EQ(r.exit_code, 2) << r.all();
  EXPECT_TRUE(contains(r.err, "no data for input 'a' (f32[1024])")) << r.all();
  EXPECT_TRUE(contains(r.err, "pass --input a=FILE.npy")) << r.all();

  r = coord({"run", dir.string(), "--input", "a=" + (inputs / "a.npy").string(), "--input",
             "b=" + (inputs / "b.npy").string()});
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(fs::exists(dir / "outputs/c.npy"));
}

TEST(RunCommandTest, L3BuildsOnAnOnboardPlatformFailBeforeAnythingIsLaunched) {
  fs::path dir = copy_fixture("l3/allreduce_w2", "l3_onboard");
  for (const char* command : {"run", "replay"}) {
    CoordResult r = coord({command, dir.string(), "--platform", "a2a3"});
    EXPECT_EQ(r.exit_code, 3) << r.all();
    EXPECT_TRUE(contains(r.err, "use 'a2a3sim'")) << r.all();
    EXPECT_FALSE(contains(r.err, "launching")) << r.all();
  }
}

TEST(RunCommandTest, BindPortsOutOfRangeAndTinyHeartbeatTimeoutsAreUsageErrors) {
  fs::path dir = copy_fixture("l3/allreduce_w2", "l3_bad_flags");
  for (const char* port : {"99999", "-1", "0", "http"}) {
    const std::string bind = std::string("tcp://127.0.0.1:") + port;
    CoordResult r = coord({"run", dir.string(), "--bind", bind});
    EXPECT_EQ(r.exit_code, 2) << r.all();
    EXPECT_TRUE(contains(r.err, "--bind " + bind + ": the port '" + port + "'")) << r.all();
    EXPECT_FALSE(contains(r.err, "launching")) << r.all();
  }
  CoordResult r = coord({"run", dir.string(), "--heartbeat-timeout", "0.05"});
  EXPECT_EQ(r.exit_code, 2) << r.all();
  EXPECT_TRUE(contains(r.err, "--heartbeat-timeout 0.05: must be at least 1 s")) << r.all();
}

TEST(RunCommandTest, PlatformOverride) {
  fs::path dir = copy_fixture("l2/vector_add", "platform");
  CoordResult r = coord({"run", dir.string(), "--platform", "a2a3"});
  EXPECT_EQ(r.exit_code, 3) << r.all();
  EXPECT_TRUE(contains(r.err, "only the simulated platforms execute here: use 'a2a3sim'"))
      << r.all();

  r = coord({"run", dir.string(), "--platform", "x86"});
  EXPECT_EQ(r.exit_code, 2) << r.all();
  EXPECT_TRUE(contains(r.err, "valid platforms: a2a3sim, a2a3, a5sim, a5")) << r.all();

  r = coord({"run", dir.string(), "--platform", "a5sim"});  // another architecture
  EXPECT_EQ(r.exit_code, 2) << r.all();
  EXPECT_FALSE(fs::exists(dir / "outputs"));
}

TEST(RunCommandTest, DfxSwitchesWriteTheirFiles) {
  fs::path dir = warm_copy("l2/fanout_fanin", "dfx");
  CoordResult r = coord({"run", dir.string(), "--swimlane", "--pmu", "1", "--dep-gen",
                         "--scope-stats", "--dump-args", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.all();
  const fs::path dfx = dir / "dfx_outputs";
  EXPECT_EQ(nlohmann::json::parse(slurp(dfx / "args_dump/args_dump.json"))["level"], 2);
  EXPECT_TRUE(contains(r.out, "dfx: " + dfx.string())) << r.all();
  for (const char* json_file : {"chip_swimlane_records.json", "deps.json", "name_map.json",
                                "args_dump/args_dump.json"}) {
    SCOPED_TRACE(json_file);
    ASSERT_TRUE(fs::exists(dfx / json_file));
    EXPECT_TRUE(nlohmann::json::accept(slurp(dfx / json_file)));
  }
  EXPECT_GT(fs::file_size(dfx / "args_dump/args.bin"), 0u);
  std::istringstream scopes(slurp(dfx / "scope_stats/scope_stats.jsonl"));
  int lines = 0;
  for (std::string line; std::getline(scopes, line); ++lines)
    EXPECT_TRUE(nlohmann::json::accept(line)) << line;
  EXPECT_GT(lines, 0);
  std::string pmu = slurp(dfx / "pmu.csv");
  EXPECT_GE(std::count(pmu.begin(), pmu.end(), '\n'), 5) << pmu;  // header + 4 tasks

  // Each switch alone writes only its own file; a run without switches leaves
  // the last run's diagnostics alone.
  r = coord({"run", dir.string(), "--swimlane-level", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(fs::exists(dfx / "chip_swimlane_records.json"));
  EXPECT_FALSE(fs::exists(dfx / "deps.json"));
  EXPECT_FALSE(fs::exists(dfx / "pmu.csv"));

  // --dump-args alone is level 1, as PyPTO's bare flag: only tagged tensors,
  // and no kernel of this build tags one.
  r = coord({"run", dir.string(), "--dump-args"});
  ASSERT_EQ(r.exit_code, 0) << r.all();
  const nlohmann::json dump = nlohmann::json::parse(slurp(dfx / "args_dump/args_dump.json"));
  EXPECT_EQ(dump["level"], 1);
  EXPECT_EQ(dump["args"].size(), 0u) << dump.dump();
}

TEST(RunCommandTest, DispatchFlags) {
  fs::path dir = warm_copy("l2/fanout_fanin", "dispatch_flags");
  CoordResult r = coord({"run", dir.string(), "--validate", "--ring-task-window", "16",
                         "--ring-heap", "65536", "--ring-dep-pool", "64,64,64,64",
                         "--aic-cores", "1", "--aiv-cores", "2", "--timeout", "30",
                         "--device-id", "5", "--log-level", "warn"});
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_EQ(r.err, "") << r.all();  // --log-level warn silences the progress lines

  const std::vector<std::vector<std::string>> bad = {
      {"--ring-heap", "7"},      {"--ring-task-window", "1,2,3"}, {"--swimlane-level", "5"},
      {"--timeout", "0"},        {"--aic-cores", "0"},            {"--pmu", "9"},
      {"--dump-args", "3"},      {"--swimlane", "2", "--swimlane-level", "3"},
      {"--log-level", "loud"}};
  for (const auto& flags : bad) {
    std::vector<std::string> args{"run", dir.string()};
    args.insert(args.end(), flags.begin(), flags.end());
    r = coord(args);
    EXPECT_EQ(r.exit_code, 2) << flags[0] << "\n" << r.all();
  }
  r = coord({"run", dir.string()}, {"PYPTO_AIV_CORES=many"});
  EXPECT_EQ(r.exit_code, 2) << r.all();
  EXPECT_TRUE(contains(r.err, "PYPTO_AIV_CORES='many'")) << r.all();
  r = coord({"run", dir.string(), "--aiv-cores", "2"}, {"PYPTO_AIV_CORES=many"});
  EXPECT_EQ(r.exit_code, 0) << r.all();  // the flag wins over the variable
}

TEST(RunCommandTest, TimeoutFailsAHangingDispatch) {
  fs::path dir = warm_copy("l2/vector_add", "timeout");
  edit_file(dir / "kernels/aiv/vadd.cpp", "#include \"pypto/kernel_abi.h\"\n",
            "#include \"pypto/kernel_abi.h\"\n#include <unistd.h>\n");
  edit_file(dir / "kernels/aiv/vadd.cpp", "  const pypto_kernel_ctx* ctx = args->ctx;\n",
            "  const pypto_kernel_ctx* ctx = args->ctx;\n  sleep(5);\n");
  const auto start = std::chrono::steady_clock::now();
  CoordResult r = coord({"run", dir.string(), "--timeout", "0.5"});
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_TRUE(contains(r.err, "after the dispatch deadline of 500 ms")) << r.all();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5))
      << "the command waited for the stuck kernels";
  EXPECT_FALSE(fs::exists(dir / "outputs/c.npy"));
}

}  // namespace
}  // namespace pypto::e2e
