// pypto-coord replay and the debug/run re-runner, run as the real binaries.
#include "tests/e2e/e2e_util.h"

namespace pypto::e2e {
namespace {

// A hand edit of the kernel source outside the generated body: c + 1.
const char* const kVaddStatement = "  ptoas_vadd(args);\n";
const char* const kVaddPlusOne =
    "  ptoas_vadd(args);\n"
    "  const pypto_tensor& c = args->tensors[2];\n"
    "  float* cp = static_cast<float*>(c.data) + c.offset;\n"
    "  for (int64_t i = 0; i < c.shape[0]; ++i) cp[i * c.strides[0]] += 1.0f;\n";

// No pypto-ptoas anywhere: PTOAS_ROOT empty and a PATH of system directories.
const std::vector<std::string> kNoPtoas = {"PTOAS_ROOT=", "PATH=/usr/bin:/bin"};

TEST(ReplayCommandTest, PicksUpAHandEditOfAKernel) {
  fs::path dir = warm_copy("l2/vector_add", "replay_edit");
  CoordResult r = coord({"replay", dir.string(), "--validate"}, kNoPtoas);
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "cache: invalidated 2 cached binaries")) << r.all();

  edit_file(dir / "kernels/aiv/vadd.cpp", kVaddStatement, kVaddPlusOne);
  r = coord({"replay", dir.string(), "--validate"}, kNoPtoas);
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_TRUE(contains(r.err, "output 'c': 1024 of 1024 elements differ")) << r.all();
  EXPECT_TRUE(contains(r.err, "first at [0] (flat 0): expected 1000, actual 1001")) << r.all();
}

TEST(ReplayCommandTest, NoRecompileStillRebuildsAChangedSource) {
  fs::path dir = warm_copy("l2/vector_add", "replay_no_recompile");
  edit_file(dir / "kernels/aiv/vadd.cpp", kVaddStatement, kVaddPlusOne);
  CoordResult r = coord({"replay", dir.string(), "--no-recompile", "--validate"},
                        kNoPtoas);
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_TRUE(contains(r.out, "cache: kept (--no-recompile)")) << r.all();
  EXPECT_TRUE(contains(r.err, "expected 1000, actual 1001")) << r.all();
}

// A .pto newer than its ptoas/<unit>.cpp, with tests/tools/fake-pypto-ptoas
// (a controllable stand-in that logs its calls) in PTOAS_ROOT.
class ReplaySpliceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = warm_copy("l2/vector_add", "splice");
    ptoas_root_ = dir_.parent_path() / "ptoas_root";
    fs::create_directories(ptoas_root_);
    fs::copy_file(fs::path(PYPTO_SOURCE_DIR) / "tests/tools/fake-pypto-ptoas",
                  ptoas_root_ / "pypto-ptoas");
    log_ = dir_.parent_path() / "ptoas.log";
    // A hand edit of the .pto, newer than ptoas/vadd.cpp. The mtime is set
    // explicitly: coarse filesystem timestamps could make the two equal.
    std::ofstream(dir_ / "ptoas/vadd.pto", std::ios::app) << "# hand edit\n";
    fs::last_write_time(dir_ / "ptoas/vadd.pto",
                        fs::last_write_time(dir_ / "ptoas/vadd.cpp") + std::chrono::seconds(2));
  }
  std::vector<std::string> env() const {
    return {"PTOAS_ROOT=" + ptoas_root_.string(), "FAKE_PTOAS_LOG=" + log_.string(),
            "PATH=/usr/bin:/bin"};
  }
  fs::path dir_, ptoas_root_, log_;
};

// The fixture's listing is real (docs/pto-format.md): the real pypto-ptoas
// regenerates the body, and an edit of one instruction changes the result.
TEST(ReplayRealPtoasTest, SplicesAnEditedPto) {
  fs::path dir = warm_copy("l2/vector_add", "splice_real");
  const std::vector<std::string> env = {
      "PTOAS_ROOT=" + fs::path(PYPTO_PTOAS_BIN).parent_path().string(), "PATH=/usr/bin:/bin"};
  const std::string before = slurp(dir / "kernels/aiv/vadd.cpp");
  const std::string begin = "// --- ptoas-generated code ---";
  const std::string entry = "// --- Kernel entry point ---";

  // A comment only: the same body comes back, byte for byte.
  // The .cpp is made older, not the .pto newer: the splice's fresh .cpp must
  // end up newer than the listing, so that the next replay sees it done.
  std::ofstream(dir / "ptoas/vadd.pto", std::ios::app) << "# hand edit\n";
  fs::last_write_time(dir / "ptoas/vadd.cpp",
                      fs::last_write_time(dir / "ptoas/vadd.pto") - std::chrono::seconds(2));
  CoordResult r = coord({"replay", dir.string(), "--validate"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "splice: re-ran pypto-ptoas on ptoas/vadd.pto")) << r.all();
  EXPECT_TRUE(contains(r.out, "splice: rewrote the generated body of kernels/aiv/vadd.cpp"))
      << r.all();
  EXPECT_EQ(slurp(dir / "kernels/aiv/vadd.cpp"), before);

  // tadd -> tsub: c = a - b. Outside the sentinels nothing changed.
  edit_file(dir / "ptoas/vadd.pto", "= tadd %t0, %t1", "= tsub %t0, %t1");
  fs::last_write_time(dir / "ptoas/vadd.cpp",
                      fs::last_write_time(dir / "ptoas/vadd.pto") - std::chrono::seconds(2));
  r = coord({"replay", dir.string(), "--validate"}, env);
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_TRUE(contains(r.out, "splice: re-ran pypto-ptoas on ptoas/vadd.pto")) << r.all();
  const std::string after = slurp(dir / "kernels/aiv/vadd.cpp");
  EXPECT_EQ(after.substr(after.find(entry)), before.substr(before.find(entry)));
  EXPECT_EQ(after.substr(0, after.find(begin)), before.substr(0, before.find(begin)));
  EXPECT_TRUE(contains(slurp(dir / "ptoas/vadd.cpp"), "tsub")) << slurp(dir / "ptoas/vadd.cpp");
  const std::vector<float> a = f32_values(read_npy(dir / "golden/inputs/a.npy"));
  const std::vector<float> b = f32_values(read_npy(dir / "golden/inputs/b.npy"));
  const std::vector<float> c = f32_values(read_npy(dir / "outputs/c.npy"));
  ASSERT_EQ(c.size(), a.size());
  for (size_t i = 0; i < c.size(); ++i) ASSERT_EQ(c[i], a[i] - b[i]) << "at " << i;
  EXPECT_TRUE(contains(r.err, "output 'c': ")) << r.all();
}

TEST_F(ReplaySpliceTest, FlagAndEnvironmentTurnTheSpliceOff) {
  const std::string before = slurp(dir_ / "kernels/aiv/vadd.cpp");
  CoordResult r = coord({"replay", dir_.string(), "--no-rebuild-from-pto", "--no-recompile",
                         "--validate"},
                        env());
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "splice: off (--no-rebuild-from-pto)")) << r.all();

  std::vector<std::string> off = env();
  off.push_back("PYPTO_REBUILD_FROM_PTO=0");
  r = coord({"replay", dir_.string(), "--no-recompile", "--validate"}, off);
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "splice: off (PYPTO_REBUILD_FROM_PTO)")) << r.all();
  EXPECT_EQ(slurp(dir_ / "kernels/aiv/vadd.cpp"), before);
  EXPECT_FALSE(fs::exists(log_));
}

TEST_F(ReplaySpliceTest, MissingPtoasIsAWarningNotAnError) {
  CoordResult r = coord({"replay", dir_.string(), "--no-recompile", "--validate"},
                        kNoPtoas);
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "splice: pypto-ptoas not found")) << r.all();
  EXPECT_TRUE(contains(r.out, "set PTOAS_ROOT")) << r.all();
}

TEST(DebugRunTest, ReplaysItsDirectoryFromAnyWorkingDirectory) {
  fs::path dir = warm_copy("l2/vector_add", "debug_run");
  const std::string path = "PATH=" + kCoordBin.parent_path().string() + ":/usr/bin:/bin";
  const fs::path elsewhere = dir.parent_path() / "elsewhere";
  fs::create_directories(elsewhere);

  CoordResult r = run_split({(dir / "debug/run").string(), "--validate", "--no-recompile"},
                            {path, "PTOAS_ROOT="}, elsewhere);
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "validation: passed")) << r.all();
  EXPECT_TRUE(fs::exists(dir / "outputs/c.npy"));

  // Relative to the caller's directory, and after the directory was moved.
  const fs::path moved = dir.parent_path() / "moved";
  fs::rename(dir, moved);
  r = run_split({"./moved/debug/run", "--validate", "--no-recompile"},
                {path, "PTOAS_ROOT="}, moved.parent_path());
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "validation: passed")) << r.all();
}

TEST(DebugRunTest, EveryFixtureHasAnExecutableRelativeRunner) {
  for (const char* group : {"l2", "l2_broken"}) {
    for (const auto& entry : fs::directory_iterator(kFixtures / group)) {
      if (!entry.is_directory()) continue;  // README.md
      const fs::path runner = entry.path() / "debug/run";
      SCOPED_TRACE(runner.string());
      ASSERT_TRUE(fs::exists(runner));
      EXPECT_NE(fs::status(runner).permissions() & fs::perms::owner_exec, fs::perms::none);
      const std::string text = slurp(runner);
      EXPECT_TRUE(contains(text, "exec pypto-coord replay \"$(dirname \"$0\")/..\" \"$@\""));
      EXPECT_FALSE(contains(text, "/work/")) << "an absolute path is baked in";
    }
  }
}

}  // namespace
}  // namespace pypto::e2e
