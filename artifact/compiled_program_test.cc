#include "pypto/compiled_program.h"

#include <gtest/gtest.h>

#include "artifact/build_paths.h"
#include "artifact/fixture_test_util.h"
#include "artifact/kernel_config.h"
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

TEST(CompiledProgramTest, LoadsTheL2Fixture) {
  CompiledProgram p = CompiledProgram::from_dir(l2_fixture());
  EXPECT_EQ(p.kind(), BuildKind::kL2);
  EXPECT_EQ(p.dir(), l2_fixture());
  EXPECT_EQ(p.name(), "vector_add");
  EXPECT_EQ(p.platform(), "a2a3sim");
  EXPECT_EQ(p.arch(), "a2a3");
  ASSERT_EQ(p.params().size(), 3u);
  EXPECT_EQ(p.orchestration().source, "orchestration/vector_add.cpp");
  EXPECT_EQ(p.kernel_config().kernels[0].source, "kernels/aiv/vadd.cpp");
  ASSERT_TRUE(p.golden().has_value());
  EXPECT_EQ(p.golden()->outputs, std::vector<std::string>{"c"});
}

TEST(CompiledProgramTest, FixtureGoldenDataMatchesTheParameters) {
  const fs::path dir = l2_fixture();
  Tensor a = read_npy(GoldenSpec::input_path(dir, "a"));
  Tensor b = read_npy(GoldenSpec::input_path(dir, "b"));
  Tensor c = read_npy(GoldenSpec::expected_path(dir, "c"));
  for (const Tensor* t : {&a, &b, &c}) {
    EXPECT_EQ(t->dtype(), DType::kF32);
    EXPECT_EQ(t->shape(), (Shape{1024}));
  }
  for (int i = 0; i < 1024; ++i) {
    EXPECT_EQ(a.data_as<float>()[i], i * 0.5f);
    EXPECT_EQ(b.data_as<float>()[i], 1000.0f - i);
    EXPECT_EQ(c.data_as<float>()[i], a.data_as<float>()[i] + b.data_as<float>()[i]);
  }
}

TEST(CompiledProgramTest, PlatformOverrideIsValidated) {
  EXPECT_EQ(CompiledProgram::from_dir(l2_fixture(), "a2a3").platform(), "a2a3");
  EXPECT_EQ(CompiledProgram::from_dir(l2_fixture(), "a2a3").recorded_platform(), "a2a3sim");
  std::string msg =
      testing::message_of<UsageError>([] { CompiledProgram::from_dir(l2_fixture(), "a5sim"); });
  EXPECT_TRUE(contains(msg, "compiled for a2a3")) << msg;
  msg = testing::message_of<UsageError>([] { CompiledProgram::from_dir(l2_fixture(), "gpu"); });
  EXPECT_TRUE(contains(msg, "a2a3sim, a2a3, a5sim, a5")) << msg;
}

TEST(CompiledProgramTest, RefusesAnL3DirectorySayingWhatToUse) {
  std::string msg =
      testing::message_of<InfraError>([] { CompiledProgram::from_dir(l3_fixture()); });
  EXPECT_TRUE(contains(msg, "L3")) << msg;
  EXPECT_TRUE(contains(msg, "DistributedCompiledProgram::from_dir")) << msg;
}

TEST(CompiledProgramTest, RefusesARankSubBuildSayingWhatToLoad) {
  std::string msg = testing::message_of<InfraError>(
      [] { CompiledProgram::from_dir(next_level_dir(l3_fixture(), 2)); });
  EXPECT_TRUE(contains(msg, "sub-build")) << msg;
  EXPECT_TRUE(contains(msg, "DistributedCompiledProgram::from_dir")) << msg;
}

TEST(CompiledProgramTest, RefusesBothKindsOfMarkers) {
  ScratchDir scratch;
  fs::path dir = scratch.copy_of(l2_fixture());
  fs::copy_file(l3_fixture() / kDistributedMetaFile, dir / kDistributedMetaFile);
  std::string msg = testing::message_of<InfraError>([&] { CompiledProgram::from_dir(dir); });
  EXPECT_TRUE(contains(msg, "both kinds")) << msg;
}

TEST(CompiledProgramTest, ProgramMustNameAnOrchestration) {
  ScratchDir scratch;
  fs::path dir = scratch.copy_of(l2_fixture());
  edit_json(dir / kCompiledMetaFile, [](Json& j) { j["program"] = "vector_sub"; });
  EXPECT_TRUE(FailsWithArtifactError([&] { CompiledProgram::from_dir(dir); }, "compiled_meta.json",
                                     "program"));
}

TEST(CompiledProgramTest, OrchestrationSignatureMustMatchTheParameters) {
  ScratchDir scratch;
  fs::path dir = scratch.copy_of(l2_fixture());
  edit_json(dir / kKernelConfigFile, [](Json& j) {
    j["orchestrations"][0]["signature"] = Json::array({"In", "In"});
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { CompiledProgram::from_dir(dir); }, "kernel_config.json",
                                     "orchestrations[0].signature"));
  edit_json(dir / kKernelConfigFile, [](Json& j) {
    j["orchestrations"][0]["signature"] = Json::array({"In", "In", "InOut"});
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { CompiledProgram::from_dir(dir); }, "kernel_config.json",
                                     "orchestrations[0].signature"));
}

TEST(CompiledProgramTest, WindowArgumentsAreRefusedInL2) {
  ScratchDir scratch;
  fs::path dir = scratch.copy_of(l2_fixture());
  edit_json(dir / kKernelConfigFile, [](Json& j) { j["kernels"][0]["signature"][1] = "Window"; });
  EXPECT_TRUE(FailsWithArtifactError([&] { CompiledProgram::from_dir(dir); }, "kernel_config.json",
                                     "kernels[0].signature[1]"));
}

TEST(CompiledProgramTest, GoldenIsOptionalButCheckedWhenPresent) {
  ScratchDir scratch;
  fs::path dir = scratch.copy_of(l2_fixture());
  fs::remove(dir / "golden/expected/c.npy");
  EXPECT_TRUE(FailsWithArtifactError([&] { CompiledProgram::from_dir(dir); }, "golden/golden.json",
                                     "outputs[0]"));
  fs::remove_all(dir / kGoldenDir);
  EXPECT_FALSE(CompiledProgram::from_dir(dir).golden().has_value());
}

TEST(CompiledProgramTest, DescribesWithoutTouchingTheDirectory) {
  // from_dir neither splices, invalidates nor compiles: the tree is unchanged.
  ScratchDir scratch;
  fs::path dir = scratch.copy_of(l2_fixture());
  fs::last_write_time(dir / "ptoas/vadd.pto",
                      fs::last_write_time(dir / "ptoas/vadd.cpp") + std::chrono::hours(1));
  const std::string kernel = testing::slurp(dir / "kernels/aiv/vadd.cpp");
  size_t files_before = 0, files_after = 0;
  for ([[maybe_unused]] const auto& e : fs::recursive_directory_iterator(dir)) ++files_before;
  CompiledProgram::from_dir(dir);
  for ([[maybe_unused]] const auto& e : fs::recursive_directory_iterator(dir)) ++files_after;
  EXPECT_EQ(files_before, files_after);
  EXPECT_EQ(testing::slurp(dir / "kernels/aiv/vadd.cpp"), kernel);
}

}  // namespace
}  // namespace pypto
