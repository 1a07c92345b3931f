#include "pypto/build_kind.h"

#include <gtest/gtest.h>

#include "artifact/build_paths.h"
#include "artifact/fixture_test_util.h"
#include "pypto/error.h"

namespace pypto {
namespace {

using testing::contains;
using testing::l2_fixture;
using testing::l3_fixture;
using testing::ScratchDir;

TEST(BuildKindTest, DetectsTheFixtures) {
  EXPECT_EQ(detect_build_kind(l2_fixture()), BuildKind::kL2);
  EXPECT_EQ(detect_build_kind(l3_fixture()), BuildKind::kL3);
  EXPECT_STREQ(build_kind_name(BuildKind::kL3), "L3");
}

TEST(BuildKindTest, BothKindsOfMarkersAreRefusedNamingTheFiles) {
  ScratchDir scratch;
  fs::path dir = scratch.copy_of(l3_fixture());
  // A stale top-level kernel_config.json from an earlier L2 compile.
  fs::copy_file(l2_fixture() / kKernelConfigFile, dir / kKernelConfigFile);
  std::string msg = testing::message_of<InfraError>([&] { detect_build_kind(dir); });
  EXPECT_TRUE(contains(msg, "kernel_config.json")) << msg;
  EXPECT_TRUE(contains(msg, "distributed_meta.json")) << msg;
  EXPECT_TRUE(contains(msg, "orchestration/host_orch.json")) << msg;
  EXPECT_TRUE(contains(msg, "fresh directory")) << msg;
  EXPECT_FALSE(contains(msg, "compiled_meta.json")) << msg;  // only the files found
}

TEST(BuildKindTest, NoMarkersAreRefused) {
  ScratchDir scratch;
  std::string msg = testing::message_of<InfraError>([&] { detect_build_kind(scratch.path()); });
  EXPECT_TRUE(contains(msg, "not a build directory")) << msg;
  EXPECT_TRUE(contains(msg, "compiled_meta.json")) << msg;
  EXPECT_TRUE(contains(msg, "distributed_meta.json")) << msg;
  msg = testing::message_of<InfraError>([&] { detect_build_kind(scratch.path() / "nope"); });
  EXPECT_TRUE(contains(msg, "does not exist")) << msg;
}

TEST(BuildKindTest, OneMarkerIsEnoughToDecideTheKind) {
  // The loader then reports the other marker as missing, naming it.
  ScratchDir scratch;
  fs::path dir = scratch.copy_of(l2_fixture());
  fs::remove(dir / kCompiledMetaFile);
  EXPECT_EQ(detect_build_kind(dir), BuildKind::kL2);
}

TEST(BuildKindTest, RemoveMarkersOfOtherKindRemovesOnlyMarkers) {
  ScratchDir scratch;
  fs::path dir = scratch.copy_of(l3_fixture());
  fs::copy_file(l2_fixture() / kCompiledMetaFile, dir / kCompiledMetaFile);
  fs::copy_file(l2_fixture() / kKernelConfigFile, dir / kKernelConfigFile);
  EXPECT_THROW(detect_build_kind(dir), InfraError);

  remove_markers_of_other_kind(dir, BuildKind::kL3);  // a fresh L3 compile
  EXPECT_FALSE(fs::exists(dir / kCompiledMetaFile));
  EXPECT_FALSE(fs::exists(dir / kKernelConfigFile));
  EXPECT_TRUE(fs::exists(dir / kDistributedMetaFile));
  EXPECT_TRUE(fs::exists(dir / kHostOrchFile));
  EXPECT_TRUE(fs::exists(dir / kGoldenFile));
  EXPECT_TRUE(fs::exists(dir / "next_levels/0/kernel_config.json"));
  EXPECT_EQ(detect_build_kind(dir), BuildKind::kL3);

  remove_markers_of_other_kind(dir, BuildKind::kL2);  // a fresh L2 compile
  EXPECT_FALSE(fs::exists(dir / kDistributedMetaFile));
  EXPECT_FALSE(fs::exists(dir / kHostOrchFile));
  EXPECT_TRUE(fs::exists(dir / "orchestration"));  // sources stay
  EXPECT_TRUE(fs::exists(dir / "next_levels/0/kernels/aiv/reduce_step.cpp"));
  EXPECT_TRUE(fs::exists(dir / kGoldenFile));
  // Nothing to remove is fine.
  EXPECT_NO_THROW(remove_markers_of_other_kind(dir, BuildKind::kL2));
}

}  // namespace
}  // namespace pypto
