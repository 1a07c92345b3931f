// pypto-coord exec: the PYPTO_EXEC_RESULT markers, single and batch.
#include <nlohmann/json.hpp>

#include "tests/e2e/e2e_util.h"

namespace pypto::e2e {
namespace {

TEST(ExecCommandTest, PassPrintsOnlyTheMarkerOnStdout) {
  fs::path dir = warm_copy("l2/vector_add", "exec_pass");
  CoordResult r = coord({"exec", dir.string()});
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_EQ(r.out, "PYPTO_EXEC_RESULT=PASS device=0\n") << r.all();
  EXPECT_TRUE(contains(r.err, "validation: passed")) << r.all();  // the summary is a diagnostic
  EXPECT_TRUE(fs::exists(dir / "outputs/c.npy"));

  r = coord({"exec", dir.string(), "--device-id", "3"});
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_EQ(r.out, "PYPTO_EXEC_RESULT=PASS device=3\n") << r.all();
}

TEST(ExecCommandTest, ValidationMismatchIsFail) {
  fs::path dir = warm_copy("l2/vector_add", "exec_fail");
  Tensor expected = read_npy(dir / "golden/expected/c.npy");
  expected.data_as<float>()[7] += 1.0f;
  write_npy(dir / "golden/expected/c.npy", expected);
  CoordResult r = coord({"exec", dir.string()});
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_EQ(r.out, "PYPTO_EXEC_RESULT=FAIL\n") << r.all();
  EXPECT_TRUE(contains(r.err, "output 'c': 1 of 1024 elements differ")) << r.all();
  EXPECT_TRUE(fs::exists(dir / "outputs/c.npy"));  // actual outputs saved either way
}

TEST(ExecCommandTest, SetupProblemsAreInfra) {
  fs::path dir = copy_fixture("l2/vector_add", "exec_infra");
  CoordResult r = coord({"exec", dir.string(), "--platform", "a2a3"});
  EXPECT_EQ(r.exit_code, 3) << r.all();
  EXPECT_EQ(r.out, "PYPTO_EXEC_RESULT=INFRA\n") << r.all();
  EXPECT_TRUE(contains(r.err, "use 'a2a3sim' instead")) << r.all();

  // An L3 build whose agents cannot be launched.
  const fs::path l3 = copy_fixture("l3/allreduce_w2", "exec_infra_l3");
  r = coord({"exec", l3.string()}, {"PYPTO_RANK=/nonexistent/pypto-rank"});
  EXPECT_EQ(r.exit_code, 3) << r.all();
  EXPECT_EQ(r.out, "PYPTO_EXEC_RESULT=INFRA\n") << r.all();
  EXPECT_TRUE(contains(r.err, "/nonexistent/pypto-rank")) << r.all();

  fs::remove_all(dir / "golden");
  r = coord({"exec", dir.string()});
  EXPECT_EQ(r.exit_code, 3) << r.all();
  EXPECT_EQ(r.out, "PYPTO_EXEC_RESULT=INFRA\n") << r.all();
  EXPECT_TRUE(contains(r.err, "exec validates against golden/")) << r.all();

  r = coord({"exec", (dir.parent_path() / "does_not_exist").string()});
  EXPECT_EQ(r.exit_code, 3) << r.all();
  EXPECT_EQ(r.out, "PYPTO_EXEC_RESULT=INFRA\n") << r.all();
}

TEST(ExecCommandTest, FlagErrorsAreUsageErrorsWithoutMarker) {
  fs::path dir = copy_fixture("l2/vector_add", "exec_usage");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"exec"},
        {"exec", dir.string(), "--manifest", "m.json"},
        {"exec", dir.string(), "--ring-heap", "7"},
        {"exec", dir.string(), "--platform", "x86"}}) {
    CoordResult r = coord(args);
    EXPECT_EQ(r.exit_code, 2) << r.all();
    EXPECT_EQ(r.out, "") << r.all();
  }
}

class ExecManifestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    good_ = warm_copy("l2/vector_add", "manifest");
    root_ = good_.parent_path();
    testing_support::copy_fixture_sources(kFixtures / "l2_broken/truncated_sidecar",
                                          root_ / "truncated");
  }
  fs::path write_manifest(const nlohmann::json& entries) {
    const fs::path m = root_ / "m.json";
    spit(m, entries.dump(2));
    return m;
  }
  fs::path good_, root_;
};

TEST_F(ExecManifestTest, OneMarkerPerEntryWithItsWorkDirAsWritten) {
  fs::path fail = copy_fixture("l2/vector_add", "manifest_fail");
  Tensor expected = read_npy(fail / "golden/expected/c.npy");
  expected.data_as<float>()[0] = -1.0f;
  write_npy(fail / "golden/expected/c.npy", expected);

  const fs::path m = write_manifest({
      {{"work_dir", "vector_add"}, {"platform", "a2a3sim"}},  // relative to the manifest
      {{"work_dir", fail.string()}},
      {{"work_dir", "truncated"}, {"platform", "a2a3sim"}},
      {{"work_dir", "vector_add"}, {"platform", "a2a3"}},  // onboard
  });
  CoordResult r = coord({"exec", "--manifest", m.string(), "--device-id", "2"},
                        {}, fs::path("/"));
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_EQ(r.out,
            "PYPTO_EXEC_RESULT=PASS work_dir=vector_add device=2\n"
            "PYPTO_EXEC_RESULT=FAIL work_dir=" + fail.string() + "\n"
            "PYPTO_EXEC_RESULT=INFRA work_dir=truncated\n"
            "PYPTO_EXEC_RESULT=INFRA work_dir=vector_add\n")
      << r.all();
  // Diagnostics go to stderr, prefixed with the entry.
  EXPECT_TRUE(contains(r.err, "[" + fail.string() + "] pypto-coord: error: validation of"))
      << r.all();
  EXPECT_TRUE(contains(r.err, "[truncated] pypto-coord: error: ")) << r.all();
  EXPECT_TRUE(contains(r.err, "kernel_config.json: is not valid JSON")) << r.all();
}

TEST_F(ExecManifestTest, ExitCodes) {
  CoordResult r = coord({"exec", "--manifest",
                         write_manifest({{{"work_dir", good_.string()}}}).string()});
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_EQ(r.out, "PYPTO_EXEC_RESULT=PASS work_dir=" + good_.string() + " device=0\n");

  r = coord({"exec", "--manifest",
             write_manifest({{{"work_dir", "vector_add"}}, {{"work_dir", "truncated"}}})
                 .string()});
  EXPECT_EQ(r.exit_code, 3) << r.all();  // INFRA but no FAIL
  EXPECT_EQ(r.out,
            "PYPTO_EXEC_RESULT=PASS work_dir=vector_add device=0\n"
            "PYPTO_EXEC_RESULT=INFRA work_dir=truncated\n")
      << r.all();

  r = coord({"exec", "--manifest", write_manifest(nlohmann::json::array()).string()});
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_EQ(r.out, "") << r.all();
}

TEST_F(ExecManifestTest, MalformedManifestIsOneInfraMarker) {
  const fs::path m = root_ / "bad.json";
  for (const std::pair<std::string, std::string>& c :
       std::vector<std::pair<std::string, std::string>>{
           {"[{\"work_dir\": \"vector_add\"", "is not valid JSON"},
           {"{\"work_dir\": \"vector_add\"}", "must be a JSON list, found object"},
           {"[{\"wrk_dir\": \"vector_add\"}]", "field '[0].work_dir': is missing"},
           {"[{\"work_dir\": \"a\", \"device\": 1}]", "field '[0].device'"},
           {"[{\"work_dir\": \"\"}]", "field '[0].work_dir': is empty"},
           {"[{\"work_dir\": \"a\", \"platform\": 7}]", "field '[0].platform'"}}) {
    spit(m, c.first);
    CoordResult r = coord({"exec", "--manifest", m.string()});
    EXPECT_EQ(r.exit_code, 3) << c.first << "\n" << r.all();
    EXPECT_EQ(r.out, "PYPTO_EXEC_RESULT=INFRA\n") << r.all();
    EXPECT_TRUE(contains(r.err, m.string() + ": " ) && contains(r.err, c.second))
        << c.first << "\n" << r.all();
  }
  CoordResult r = coord({"exec", "--manifest", (root_ / "absent.json").string()});
  EXPECT_EQ(r.exit_code, 3) << r.all();
  EXPECT_EQ(r.out, "PYPTO_EXEC_RESULT=INFRA\n") << r.all();
  EXPECT_TRUE(contains(r.err, "absent.json: does not exist")) << r.all();
}

TEST_F(ExecManifestTest, DispatchFlagsReachEveryEntry) {
  CoordResult r = coord({"exec", "--manifest",
                         write_manifest({{{"work_dir", "vector_add"}}}).string(), "--dep-gen",
                         "--swimlane", "2", "--timeout", "30"});
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(fs::exists(good_ / "dfx_outputs/deps.json")) << r.all();
  auto swimlane = nlohmann::json::parse(slurp(good_ / "dfx_outputs/chip_swimlane_records.json"));
  EXPECT_FALSE(swimlane.empty());
}

}  // namespace
}  // namespace pypto::e2e
