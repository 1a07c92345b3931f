// pypto-coord inspect on the fixtures, run as the real binary.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/subprocess.h"
#include "tests/fixture_copy.h"

namespace pypto {
namespace {

namespace fs = std::filesystem;

const fs::path kFixtures = fs::path(PYPTO_SOURCE_DIR) / "tests/fixtures";

SubprocessResult coord(const std::vector<std::string>& args) {
  std::vector<std::string> argv{PYPTO_COORD_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  SubprocessOptions options;
  options.timeout = std::chrono::seconds(60);
  return run_subprocess(argv, options);
}

TEST(InspectCommandTest, DescribesTheL2Fixture) {
  auto r = coord({"inspect", (kFixtures / "l2/vector_add").string()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("L2 build of 'vector_add'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("platform     a2a3sim (arch a2a3)"), std::string::npos);
  EXPECT_NE(r.output.find("c: Out f32[1024]"), std::string::npos);
  EXPECT_NE(r.output.find("kernel  0 vadd (aiv)  kernels/aiv/vadd.cpp"), std::string::npos);
}

TEST(InspectCommandTest, JsonDescribesEveryRankOfTheL3Fixture) {
  auto r = coord({"inspect", "--json", (kFixtures / "l3/allreduce_w8").string()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto d = nlohmann::json::parse(r.output);
  EXPECT_EQ(d["kind"], "L3");
  EXPECT_EQ(d["world_size"], 8);
  EXPECT_EQ(d["device_ids"], nlohmann::json({0, 1, 2, 3, 4, 5, 6, 7}));
  ASSERT_EQ(d["ranks"].size(), 8u);
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(d["ranks"][r]["dir"], "next_levels/" + std::to_string(r));
    EXPECT_EQ(d["ranks"][r]["programs"], nlohmann::json({"chip_orch"}));
    EXPECT_EQ(d["ranks"][r]["kernels"][0]["source"], "kernels/aiv/reduce_step.cpp");
    EXPECT_TRUE(d["ranks"][r]["kernels"][0]["cache"] == "missing" ||
                d["ranks"][r]["kernels"][0]["cache"] == "fresh");
  }
  EXPECT_EQ(d["windows"][0]["name"], "data");
}

TEST(InspectCommandTest, ValidationErrorsExitWithCode3NamingFileAndField) {
  fs::path dir = testing_support::scratch_fixture_copy("l2/vector_add", "broken");
  auto config = nlohmann::json::parse(std::ifstream(dir / "kernel_config.json"));
  config["kernels"][0]["source"] = "kernels/aiv/missing.cpp";
  std::ofstream(dir / "kernel_config.json") << config.dump();
  auto r = coord({"inspect", dir.string()});
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("kernel_config.json: field 'kernels[0].source'"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("Rewrite it by recompiling"), std::string::npos) << r.output;
}

TEST(InspectCommandTest, TruncatedSidecarExitsWithCode3) {
  fs::path dir = testing_support::scratch_fixture_copy("l2/vector_add", "truncated");
  std::ofstream(dir / "compiled_meta.json") << "{\"schema\": 1, \"program\": \"vec";
  auto r = coord({"inspect", dir.string()});
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("compiled_meta.json: is not valid JSON"), std::string::npos) << r.output;
}

TEST(InspectCommandTest, UsageErrorsExitWithCode2) {
  EXPECT_EQ(coord({"inspect"}).exit_code, 2);
  EXPECT_EQ(coord({"frobnicate"}).exit_code, 2);
  auto r = coord({"inspect", (kFixtures / "l2/vector_add").string(), "--log-level", "loud"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("debug, info, timing, warn, error, null"), std::string::npos);
}

TEST(InspectCommandTest, NotABuildDirectoryIsInfra) {
  const fs::path dir = testing_support::scratch_dir("inspect_empty");
  auto r = coord({"inspect", dir.string()});
  EXPECT_EQ(r.exit_code, 3) << r.output;
}

}  // namespace
}  // namespace pypto
