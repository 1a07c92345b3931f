#include "pypto/distributed_compiled_program.h"

#include <gtest/gtest.h>

#include <functional>

#include "artifact/build_paths.h"
#include "artifact/chip_build.h"
#include "artifact/fixture_test_util.h"
#include "artifact/host_orch.h"
#include "pypto/error.h"
#include "pypto/npy.h"

namespace pypto {
namespace {

using testing::contains;
using testing::edit_json;
using testing::FailsWithArtifactError;
using testing::l2_fixture;
using testing::l3_fixture;
using testing::ScratchDir;

constexpr const char* kHostOrch = "orchestration/host_orch.json";

class DistributedCompiledProgramTest : public ::testing::Test {
 protected:
  fs::path copy() { return scratch_.copy_of(l3_fixture()); }
  ScratchDir scratch_;
};

TEST_F(DistributedCompiledProgramTest, LoadsTheL3Fixture) {
  DistributedCompiledProgram p = DistributedCompiledProgram::from_dir(l3_fixture());
  EXPECT_EQ(p.kind(), BuildKind::kL3);
  EXPECT_EQ(p.name(), "main");
  EXPECT_EQ(p.world_size(), 8);
  EXPECT_EQ(p.platform(), "a2a3sim");
  EXPECT_EQ(p.device_ids(), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  ASSERT_EQ(p.params().size(), 2u);
  EXPECT_EQ(p.params()[1].name, "y");
  ASSERT_EQ(p.chips().size(), 8u);
  for (int64_t r = 0; r < 8; ++r) {
    const ChipBuild& chip = p.chip(r);
    EXPECT_EQ(chip.dir, l3_fixture() / "next_levels" / std::to_string(r));
    EXPECT_EQ(chip.config.orchestrations[0].source, "orchestration/chip_orch.cpp");
    EXPECT_EQ(chip.config.kernels[0].source, "kernels/aiv/reduce_step.cpp");
    auto dispatches = p.dispatches_of(r);
    ASSERT_EQ(dispatches.size(), 1u);
    EXPECT_EQ(dispatches[0]->program, "chip_orch");
    EXPECT_EQ(dispatches[0]->args[1].offsets, (std::vector<int64_t>{r, 0, 0}));
  }
  EXPECT_EQ(p.host_orch().find_window("data")->bytes, 1024);
  ASSERT_TRUE(p.golden().has_value());
  EXPECT_EQ(p.golden()->outputs, std::vector<std::string>{"y"});
}

TEST_F(DistributedCompiledProgramTest, FixtureGoldenDataIsTheSumOverRanks) {
  Tensor x = read_npy(GoldenSpec::input_path(l3_fixture(), "x"));
  Tensor y = read_npy(GoldenSpec::expected_path(l3_fixture(), "y"));
  ASSERT_EQ(x.shape(), (Shape{8, 1, 256}));
  ASSERT_EQ(y.shape(), (Shape{8, 1, 256}));
  const float* xs = x.data_as<float>();
  const float* ys = y.data_as<float>();
  for (int i = 0; i < 256; ++i) {
    float sum = 0;
    for (int r = 0; r < 8; ++r) {
      EXPECT_EQ(xs[r * 256 + i], r + i / 256.0f);
      sum += xs[r * 256 + i];
    }
    for (int r = 0; r < 8; ++r) EXPECT_EQ(ys[r * 256 + i], sum);
  }
}

TEST_F(DistributedCompiledProgramTest, RefusesAnL2DirectorySayingWhatToUse) {
  std::string msg =
      testing::message_of<InfraError>([] { DistributedCompiledProgram::from_dir(l2_fixture()); });
  EXPECT_TRUE(contains(msg, "L2")) << msg;
  EXPECT_TRUE(contains(msg, "CompiledProgram::from_dir")) << msg;
}

TEST_F(DistributedCompiledProgramTest, StaleL2MarkerIsRefused) {
  fs::path dir = copy();
  fs::copy_file(l2_fixture() / kKernelConfigFile, dir / kKernelConfigFile);
  std::string msg =
      testing::message_of<InfraError>([&] { DistributedCompiledProgram::from_dir(dir); });
  EXPECT_TRUE(contains(msg, "kernel_config.json")) << msg;
  EXPECT_TRUE(contains(msg, "both kinds")) << msg;
}

TEST_F(DistributedCompiledProgramTest, EveryRankNeedsItsSubBuild) {
  fs::path dir = copy();
  fs::remove_all(dir / "next_levels/5");
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedCompiledProgram::from_dir(dir); },
                                     "next_levels/5/kernel_config.json", ""));
}

TEST_F(DistributedCompiledProgramTest, ASubBuildLinkedFromOutsideTheBuildIsRefused) {
  fs::path dir = copy();
  fs::path outside = scratch_.copy_of(l3_fixture(), "outside") / "next_levels/2";
  fs::remove_all(dir / "next_levels/2");
  fs::create_directory_symlink(outside, dir / "next_levels/2");
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedCompiledProgram::from_dir(dir); },
                                     "next_levels/2", ""));
  std::string msg =
      testing::message_of<ArtifactError>([&] { DistributedCompiledProgram::from_dir(dir); });
  EXPECT_TRUE(contains(msg, "symbolic link")) << msg;
  EXPECT_TRUE(contains(msg, "outside the build directory")) << msg;
}

TEST_F(DistributedCompiledProgramTest, ALinkedNextLevelsFolderFromOutsideIsRefused) {
  fs::path dir = copy();
  fs::path outside = scratch_.copy_of(l3_fixture(), "outside") / "next_levels";
  fs::remove_all(dir / "next_levels");
  fs::create_directory_symlink(outside, dir / "next_levels");
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedCompiledProgram::from_dir(dir); },
                                     "next_levels", ""));
}

TEST_F(DistributedCompiledProgramTest, SubBuildErrorsNameTheRankFile) {
  fs::path dir = copy();
  fs::remove(dir / "next_levels/6/kernels/aiv/reduce_step.cpp");
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedCompiledProgram::from_dir(dir); },
                                     "next_levels/6/kernel_config.json", "kernels[0].source"));
  std::string msg =
      testing::message_of<ArtifactError>([&] { DistributedCompiledProgram::from_dir(dir); });
  EXPECT_TRUE(contains(msg, "-o " + dir.generic_string() + ")")) << msg;  // the L3 build
}

TEST_F(DistributedCompiledProgramTest, WindowRankOutOfRange) {
  fs::path dir = copy();
  edit_json(dir / kHostOrch, [](Json& j) { j["windows"][1]["ranks"].push_back(8); });
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedCompiledProgram::from_dir(dir); }, kHostOrch,
                                     "windows[1].ranks[8]"));
  std::string msg =
      testing::message_of<ArtifactError>([&] { DistributedCompiledProgram::from_dir(dir); });
  EXPECT_TRUE(contains(msg, "world_size is 8")) << msg;
}

TEST_F(DistributedCompiledProgramTest, DispatchRankOutOfRange) {
  fs::path dir = copy();
  edit_json(dir / kHostOrch, [](Json& j) {
    j["windows"][0]["ranks"].push_back(9);
    j["windows"][1]["ranks"].push_back(9);
    j["dispatches"][7]["rank"] = 9;
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedCompiledProgram::from_dir(dir); }, kHostOrch,
                                     "windows[0].ranks[8]"));
  edit_json(dir / kHostOrch, [](Json& j) {
    j["windows"][0]["ranks"].erase(8);
    j["windows"][1]["ranks"].erase(8);
    j["dispatches"][7]["args"] = Json::array();
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedCompiledProgram::from_dir(dir); }, kHostOrch,
                                     "dispatches[7].rank"));
}

TEST_F(DistributedCompiledProgramTest, DispatchProgramMustExistInTheRanksKernelConfig) {
  fs::path dir = copy();
  edit_json(dir / kHostOrch, [](Json& j) { j["dispatches"][3]["program"] = "chip_orch2"; });
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedCompiledProgram::from_dir(dir); }, kHostOrch,
                                     "dispatches[3].program"));
  std::string msg =
      testing::message_of<ArtifactError>([&] { DistributedCompiledProgram::from_dir(dir); });
  EXPECT_TRUE(contains(msg, "next_levels/3/kernel_config.json")) << msg;
  EXPECT_TRUE(contains(msg, "chip_orch")) << msg;
}

TEST_F(DistributedCompiledProgramTest, HostBoxMustLieInsideTheParameter) {
  fs::path dir = copy();
  edit_json(dir / kHostOrch, [](Json& j) { j["dispatches"][2]["args"][0]["offsets"][2] = 1; });
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedCompiledProgram::from_dir(dir); }, kHostOrch,
                                     "dispatches[2].args[0].shape"));
  edit_json(dir / kHostOrch, [](Json& j) { j["dispatches"][2]["args"][0]["offsets"] = {8, 0, 0}; });
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedCompiledProgram::from_dir(dir); }, kHostOrch,
                                     "dispatches[2].args[0].shape"));
  edit_json(dir / kHostOrch, [](Json& j) {
    j["dispatches"][2]["args"][0]["offsets"] = {2, 0};
    j["dispatches"][2]["args"][0]["shape"] = {1, 256};
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedCompiledProgram::from_dir(dir); }, kHostOrch,
                                     "dispatches[2].args[0].offsets"));
  edit_json(dir / kHostOrch, [](Json& j) {
    j["dispatches"][2]["args"][0]["offsets"] = {2, 0, 0};
    j["dispatches"][2]["args"][0]["shape"] = {1, 1, 256};
    j["dispatches"][2]["args"][0]["param"] = "z";
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedCompiledProgram::from_dir(dir); }, kHostOrch,
                                     "dispatches[2].args[0].param"));
}

TEST_F(DistributedCompiledProgramTest, HostIntermediatesAreBoundLikeInOutParameters) {
  fs::path dir = copy();
  // Dispatch 1 writes its output into intermediate t instead of y.
  edit_json(dir / kHostOrch, [](Json& j) {
    j["intermediates"] = Json::array({Json{{"name", "t"}, {"dtype", "f32"}, {"shape", {8, 1, 256}}}});
    j["dispatches"][1]["args"][1]["param"] = "t";
  });
  DistributedCompiledProgram p = DistributedCompiledProgram::from_dir(dir);
  ASSERT_EQ(p.host_orch().intermediates.size(), 1u);
  EXPECT_EQ(p.host_orch().intermediates[0].shape, (std::vector<int64_t>{8, 1, 256}));
  EXPECT_EQ(HostOrch::load(dir), p.host_orch());  // to_json/from_json round trip
  p.host_orch().write(dir);
  EXPECT_EQ(HostOrch::load(dir), p.host_orch());

  // A box outside it, an intermediate named like a parameter, a bad extent.
  edit_json(dir / kHostOrch, [](Json& j) { j["intermediates"][0]["shape"] = {1, 1, 256}; });
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedCompiledProgram::from_dir(dir); }, kHostOrch,
                                     "dispatches[1].args[1].shape"));
  edit_json(dir / kHostOrch, [](Json& j) { j["intermediates"][0]["name"] = "x"; });
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedCompiledProgram::from_dir(dir); }, kHostOrch,
                                     "intermediates[0].name"));
  edit_json(dir / kHostOrch, [](Json& j) {
    j["intermediates"][0]["name"] = "t";
    j["intermediates"][0]["shape"] = {8, 0, 256};
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedCompiledProgram::from_dir(dir); }, kHostOrch,
                                     "intermediates[0].shape"));
}

TEST_F(DistributedCompiledProgramTest, AHostArgumentCanLiveInAWindow) {
  fs::path dir = copy();
  edit_json(dir / kHostOrch, [](Json& j) {
    for (Json& d : j["dispatches"]) d["args"][1]["window"] = "data";  // y[r] in window data
  });
  const DistributedCompiledProgram p = DistributedCompiledProgram::from_dir(dir);
  EXPECT_EQ(p.dispatches_of(3)[0]->args[1].window, "data");
  EXPECT_EQ(p.dispatches_of(3)[0]->args[0].window, "");
  EXPECT_EQ(p.host_orch().to_json()["dispatches"][3]["args"][1]["window"], "data");
}

TEST_F(DistributedCompiledProgramTest, AnInPlaceArgumentNeedsAWindowThatHoldsIt) {
  auto refused = [&](const std::function<void(Json&)>& edit, const std::string& field,
                     const std::string& text) {
    fs::path dir = copy();
    edit_json(dir / kHostOrch, edit);
    EXPECT_TRUE(FailsWithArtifactError([&] { DistributedCompiledProgram::from_dir(dir); },
                                       kHostOrch, field));
    const std::string msg =
        testing::message_of<ArtifactError>([&] { DistributedCompiledProgram::from_dir(dir); });
    EXPECT_TRUE(contains(msg, text)) << msg;
  };
  refused([](Json& j) { j["dispatches"][0]["args"][1]["window"] = "nowhere"; },
          "dispatches[0].args[1].window", "'nowhere', which is not a window of this file");
  refused([](Json& j) { j["dispatches"][0]["args"][1]["window"] = "signal"; },
          "dispatches[0].args[1].window", "an in-place argument needs a window of its own dtype");
  refused(
      [](Json& j) {
        j["windows"][0]["shape"] = {1, 128};
        j["windows"][0]["bytes"] = 512;
        j["dispatches"][0]["args"][1]["window"] = "data";
      },
      "dispatches[0].args[1].window", "places a box of 1024 bytes");
  refused(
      [](Json& j) {
        j["dispatches"][0]["args"][0]["window"] = "data";
        j["dispatches"][0]["args"][1]["window"] = "data";
      },
      "dispatches[0].args[1].window", "each window holds at most one in-place argument");
}

TEST_F(DistributedCompiledProgramTest, OutArgumentMustBindAnOutputParameter) {
  fs::path dir = copy();
  edit_json(dir / kHostOrch, [](Json& j) { j["dispatches"][1]["args"][1]["param"] = "x"; });
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedCompiledProgram::from_dir(dir); }, kHostOrch,
                                     "dispatches[1].args[1].param"));
}

TEST_F(DistributedCompiledProgramTest, ArgumentsMustMatchTheSignature) {
  fs::path dir = copy();
  edit_json(dir / kHostOrch, [](Json& j) { j["dispatches"][4]["args"].erase(3); });
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedCompiledProgram::from_dir(dir); }, kHostOrch,
                                     "dispatches[4].args"));
  std::string msg =
      testing::message_of<ArtifactError>([&] { DistributedCompiledProgram::from_dir(dir); });
  EXPECT_TRUE(contains(msg, "[In, Out, Window, Window]")) << msg;
  edit_json(dir / kHostOrch, [](Json& j) {
    j["dispatches"][4]["args"].push_back(Json{{"kind", "scalar"}, {"value", 3}});
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedCompiledProgram::from_dir(dir); }, kHostOrch,
                                     "dispatches[4].args[3].kind"));
  edit_json(dir / kHostOrch, [](Json& j) {
    j["dispatches"][4]["args"][3] = Json{{"kind", "window"}, {"window", "signal"}};
    std::swap(j["dispatches"][4]["args"][0], j["dispatches"][4]["args"][2]);
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedCompiledProgram::from_dir(dir); }, kHostOrch,
                                     "dispatches[4].args[0].kind"));
}

TEST_F(DistributedCompiledProgramTest, PlatformOverrideIsValidated) {
  DistributedOverrides o;
  o.platform = "a2a3";
  EXPECT_EQ(DistributedCompiledProgram::from_dir(l3_fixture(), o).platform(), "a2a3");
  o.platform = "a5sim";
  std::string msg = testing::message_of<UsageError>(
      [&] { DistributedCompiledProgram::from_dir(l3_fixture(), o); });
  EXPECT_TRUE(contains(msg, "a5sim")) << msg;
  o.platform = "x86";
  EXPECT_THROW(DistributedCompiledProgram::from_dir(l3_fixture(), o), UsageError);
}

TEST_F(DistributedCompiledProgramTest, DeviceIdsOverrideIsValidated) {
  DistributedOverrides o;
  o.device_ids = std::vector<int64_t>{8, 9, 10, 11, 12, 13, 14, 15};
  EXPECT_EQ(DistributedCompiledProgram::from_dir(l3_fixture(), o).device_ids(), *o.device_ids);
  o.device_ids = std::vector<int64_t>{0, 1, 2};
  std::string msg = testing::message_of<UsageError>(
      [&] { DistributedCompiledProgram::from_dir(l3_fixture(), o); });
  EXPECT_TRUE(contains(msg, "world_size is 8")) << msg;
  o.device_ids = std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 6};
  msg = testing::message_of<UsageError>(
      [&] { DistributedCompiledProgram::from_dir(l3_fixture(), o); });
  EXPECT_TRUE(contains(msg, "twice")) << msg;
  o.device_ids = std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, -1};
  EXPECT_THROW(DistributedCompiledProgram::from_dir(l3_fixture(), o), UsageError);
}

TEST_F(DistributedCompiledProgramTest, GoldenChecksUseTheHostParameters) {
  fs::path dir = copy();
  fs::remove(dir / "golden/inputs/x.npy");
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedCompiledProgram::from_dir(dir); },
                                     "golden/inputs/x.npy", ""));
  fs::remove_all(dir / kGoldenDir);
  EXPECT_FALSE(DistributedCompiledProgram::from_dir(dir).golden().has_value());
}

}  // namespace
}  // namespace pypto
