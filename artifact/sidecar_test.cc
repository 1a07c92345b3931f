// Every sidecar of docs/build-directory.md: the fixtures load, each rule is
// enforced with an error naming the file and the field, and write() output
// loads back equal.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdint>

#include "artifact/build_paths.h"
#include "artifact/compiled_meta.h"
#include "artifact/distributed_meta.h"
#include "artifact/fixture_test_util.h"
#include "artifact/host_orch.h"
#include "artifact/kernel_config.h"
#include "artifact/sidecar_checks.h"
#include "pypto/golden_spec.h"

namespace pypto {
namespace {

using testing::contains;
using testing::edit_json;
using testing::FailsWithArtifactError;
using testing::l2_fixture;
using testing::l3_fixture;
using testing::ScratchDir;

class SidecarTest : public ::testing::Test {
 protected:
  fs::path l2() { return scratch_.copy_of(l2_fixture(), "l2"); }
  fs::path l3() { return scratch_.copy_of(l3_fixture(), "l3"); }
  ScratchDir scratch_;
};

// ---- the fixtures load ----

TEST_F(SidecarTest, L2FixtureSidecarsLoad) {
  const fs::path dir = l2_fixture();
  CompiledMeta meta = CompiledMeta::load(dir);
  EXPECT_EQ(meta.program, "vector_add");
  ASSERT_EQ(meta.params.size(), 3u);
  EXPECT_EQ(meta.params[2].name, "c");
  EXPECT_EQ(meta.params[2].direction, Direction::kOut);
  EXPECT_EQ(meta.params[0].shape, std::vector<int64_t>{1024});
  EXPECT_EQ(meta.platform, "a2a3sim");
  EXPECT_EQ(meta.arch, "a2a3");
  EXPECT_EQ(meta.compiler_version, "hand-written");

  KernelConfig config = KernelConfig::load(dir);
  EXPECT_EQ(config.runtime, "tensormap_and_ringbuffer");
  EXPECT_EQ(config.aicpu_thread_num, 1);
  ASSERT_EQ(config.orchestrations.size(), 1u);
  EXPECT_EQ(config.orchestrations[0].source, "orchestration/vector_add.cpp");
  EXPECT_EQ(config.orchestrations[0].function_name, "orchestration_entry");
  ASSERT_EQ(config.kernels.size(), 1u);
  EXPECT_EQ(config.kernels[0].name, "vadd");
  EXPECT_EQ(config.kernels[0].core_type, CoreType::kAiv);
  EXPECT_EQ(signature_string(config.kernels[0].signature), "[In, In, Out]");

  GoldenSpec golden = GoldenSpec::load(dir, meta.params);
  EXPECT_DOUBLE_EQ(golden.rtol, 1e-6);
  EXPECT_EQ(golden.outputs, std::vector<std::string>{"c"});
  EXPECT_EQ(golden.seed, 0);
}

TEST_F(SidecarTest, L3FixtureSidecarsLoad) {
  const fs::path dir = l3_fixture();
  DistributedMeta meta = DistributedMeta::load(dir);
  EXPECT_EQ(meta.program, "main");
  EXPECT_EQ(meta.world_size, 8);
  EXPECT_EQ(meta.distributed_config.device_ids, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(meta.distributed_config.num_sub_workers, 0);
  EXPECT_EQ(meta.params[0].type_string(), "f32[8, 1, 256]");

  HostOrch plan = HostOrch::load(dir);
  ASSERT_EQ(plan.windows.size(), 2u);
  EXPECT_EQ(plan.windows[1].name, "signal");
  EXPECT_EQ(plan.windows[1].dtype, DType::kI32);
  EXPECT_EQ(plan.windows[1].bytes, 32);
  ASSERT_EQ(plan.dispatches.size(), 8u);
  EXPECT_EQ(plan.dispatches[3].rank, 3);
  EXPECT_EQ(plan.dispatches[3].args[0], HostArg::host("x", {3, 0, 0}, {1, 1, 256}));
  EXPECT_EQ(plan.dispatches[3].args[3], HostArg::window_arg("signal"));
  EXPECT_EQ(plan.dispatches_of(5), std::vector<size_t>{5});

  for (int r = 0; r < 8; ++r) {
    KernelConfig config = KernelConfig::load(next_level_dir(dir, r));
    EXPECT_EQ(config.orchestrations[0].name, "chip_orch");
    EXPECT_EQ(signature_string(config.kernels[0].signature), "[In, Out, Window, Window]");
  }
  EXPECT_EQ(GoldenSpec::load(dir, meta.params).outputs, std::vector<std::string>{"y"});
}

TEST_F(SidecarTest, L3RankCopiesAreByteIdentical) {
  const fs::path rank0 = next_level_dir(l3_fixture(), 0);
  for (int r = 1; r < 8; ++r) {
    const fs::path rank = next_level_dir(l3_fixture(), r);
    for (const auto& entry : fs::recursive_directory_iterator(rank0)) {
      if (!entry.is_regular_file()) continue;
      const fs::path rel = fs::relative(entry.path(), rank0);
      if (*rel.begin() == kCacheDir) continue;  // written by runs, ignored by git
      EXPECT_EQ(testing::slurp(entry.path()), testing::slurp(rank / rel)) << rank / rel;
    }
  }
}

// The kernel bodies between the sentinels equal ptoas/<unit>.cpp.
TEST_F(SidecarTest, FixtureKernelBodiesMatchPtoasOutput) {
  struct Unit {
    fs::path dir;
    std::string kernel;
    std::string unit;
  };
  for (const Unit& u :
       {Unit{l2_fixture(), "kernels/aiv/vadd.cpp", "vadd"},
        Unit{next_level_dir(l3_fixture(), 0), "kernels/aiv/reduce_step.cpp", "reduce_step"}}) {
    const std::string kernel = testing::slurp(u.dir / u.kernel);
    const std::string begin = "// --- ptoas-generated code ---\n";
    const std::string end = "// --- Kernel entry point ---\n";
    size_t b = kernel.find(begin);
    size_t e = kernel.find(end);
    ASSERT_NE(b, std::string::npos) << u.kernel;
    ASSERT_NE(e, std::string::npos) << u.kernel;
    b += begin.size();
    EXPECT_EQ(kernel.substr(b, e - b), testing::slurp(u.dir / "ptoas" / (u.unit + ".cpp")));
    EXPECT_TRUE(fs::exists(u.dir / "ptoas" / (u.unit + ".pto")));
  }
}

TEST_F(SidecarTest, DebugRunnersAreExecutableAndRelative) {
  for (const fs::path& dir : {l2_fixture(), l3_fixture()}) {
    const fs::path run = dir / kDebugRunner;
    ASSERT_TRUE(fs::is_regular_file(run));
    EXPECT_NE(fs::status(run).permissions() & fs::perms::owner_exec, fs::perms::none);
    const std::string text = testing::slurp(run);
    EXPECT_TRUE(contains(text, "exec pypto-coord replay \"$(dirname \"$0\")/..\" \"$@\""));
    EXPECT_FALSE(contains(text, PYPTO_SOURCE_DIR));
  }
}

// ---- rules every file shares ----

TEST_F(SidecarTest, UnknownKeyIsRejected) {
  fs::path dir = l2();
  edit_json(dir / kKernelConfigFile, [](Json& j) { j["kernels"][0]["sorce"] = "x"; });
  EXPECT_TRUE(FailsWithArtifactError([&] { KernelConfig::load(dir); }, "kernel_config.json",
                                     "kernels[0].sorce"));
  edit_json(dir / kCompiledMetaFile, [](Json& j) { j["extra"] = 1; });
  EXPECT_TRUE(
      FailsWithArtifactError([&] { CompiledMeta::load(dir); }, "compiled_meta.json", "extra"));
}

TEST_F(SidecarTest, WrongTypeIsRejected) {
  fs::path dir = l2();
  edit_json(dir / kKernelConfigFile, [](Json& j) { j["aicpu_thread_num"] = "1"; });
  EXPECT_TRUE(FailsWithArtifactError([&] { KernelConfig::load(dir); }, "kernel_config.json",
                                     "aicpu_thread_num"));
  edit_json(dir / kCompiledMetaFile, [](Json& j) { j["params"][1]["shape"] = {1024.5}; });
  EXPECT_TRUE(FailsWithArtifactError([&] { CompiledMeta::load(dir); }, "compiled_meta.json",
                                     "params[1].shape"));
}

TEST_F(SidecarTest, OtherSchemaVersionIsRejectedNamingBoth) {
  fs::path dir = l3();
  edit_json(dir / kHostOrchFile, [](Json& j) { j["schema"] = 2; });
  EXPECT_TRUE(FailsWithArtifactError([&] { HostOrch::load(dir); }, "orchestration/host_orch.json",
                                     "schema"));
  std::string msg = testing::message_of<ArtifactError>([&] { HostOrch::load(dir); });
  EXPECT_TRUE(contains(msg, "is 2")) << msg;
  EXPECT_TRUE(contains(msg, "schema 1")) << msg;
}

TEST_F(SidecarTest, TruncatedEmptyAndMissingFilesAreRejected) {
  fs::path dir = l3();
  const fs::path meta = dir / kDistributedMetaFile;
  std::string text = testing::slurp(meta);
  testing::spit(meta, text.substr(0, text.size() / 2));
  EXPECT_TRUE(
      FailsWithArtifactError([&] { DistributedMeta::load(dir); }, "distributed_meta.json", ""));
  EXPECT_TRUE(contains(testing::message_of<ArtifactError>([&] { DistributedMeta::load(dir); }),
                       "not valid JSON"));
  testing::spit(meta, "");
  EXPECT_TRUE(contains(testing::message_of<ArtifactError>([&] { DistributedMeta::load(dir); }),
                       "is empty"));
  fs::remove(meta);
  EXPECT_TRUE(
      FailsWithArtifactError([&] { DistributedMeta::load(dir); }, "distributed_meta.json", ""));
  EXPECT_TRUE(contains(testing::message_of<ArtifactError>([&] { DistributedMeta::load(dir); }),
                       "is missing"));
}

TEST_F(SidecarTest, ErrorsShowTheDirectoryAsGivenAndTheRemedy) {
  ArtifactError e("", "", "", "");
  try {
    KernelConfig::load("no/such/build");
    FAIL();
  } catch (const ArtifactError& error) {
    e = error;
  }
  EXPECT_EQ(e.file(), "no/such/build/kernel_config.json");
  EXPECT_TRUE(contains(e.what(),
                       "recompiling the program into this directory "
                       "(pypto-compile <program>.ptl -o no/such/build)"));
  EXPECT_TRUE(contains(e.what(),
                       "for a hand-written fixture, restore the file from version "
                       "control"));
  // A sub-build's remedy names the L3 build a compile writes.
  EXPECT_TRUE(contains(recompile_remedy("build/x/next_levels/3"), "-o build/x)"));
}

// ---- compiled_meta.json ----

TEST_F(SidecarTest, PlatformAndArchMustBeKnownAndAgree) {
  fs::path dir = l2();
  edit_json(dir / kCompiledMetaFile, [](Json& j) { j["arch"] = "a5"; });
  EXPECT_TRUE(
      FailsWithArtifactError([&] { CompiledMeta::load(dir); }, "compiled_meta.json", "arch"));
  edit_json(dir / kCompiledMetaFile, [](Json& j) { j["platform"] = "a3sim"; });
  EXPECT_TRUE(
      FailsWithArtifactError([&] { CompiledMeta::load(dir); }, "compiled_meta.json", "platform"));
  edit_json(dir / kCompiledMetaFile, [](Json& j) {
    j["platform"] = "a5sim";
    j["arch"] = "a6";
  });
  EXPECT_TRUE(
      FailsWithArtifactError([&] { CompiledMeta::load(dir); }, "compiled_meta.json", "arch"));
}

TEST_F(SidecarTest, CompiledMetaRejectsEmptyProgramAndNegativeReturns) {
  fs::path dir = l2();
  edit_json(dir / kCompiledMetaFile, [](Json& j) { j["program"] = ""; });
  EXPECT_TRUE(
      FailsWithArtifactError([&] { CompiledMeta::load(dir); }, "compiled_meta.json", "program"));
  edit_json(dir / kCompiledMetaFile, [](Json& j) {
    j["program"] = "vector_add";
    j["num_return_types"] = -1;
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { CompiledMeta::load(dir); }, "compiled_meta.json",
                                     "num_return_types"));
}

TEST_F(SidecarTest, CompiledMetaRejectsBadParams) {
  fs::path dir = l2();
  edit_json(dir / kCompiledMetaFile, [](Json& j) { j["params"][0]["dtype"] = "float32"; });
  EXPECT_TRUE(FailsWithArtifactError([&] { CompiledMeta::load(dir); }, "compiled_meta.json",
                                     "params[0].dtype"));
  edit_json(dir / kCompiledMetaFile, [](Json& j) {
    j["params"][0]["dtype"] = "f32";
    j["params"][2]["direction"] = "Output";
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { CompiledMeta::load(dir); }, "compiled_meta.json",
                                     "params[2].direction"));
  edit_json(dir / kCompiledMetaFile, [](Json& j) {
    j["params"][2]["direction"] = "Out";
    j["params"][2]["name"] = "a";
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { CompiledMeta::load(dir); }, "compiled_meta.json",
                                     "params[2].name"));
}

// ---- kernel_config.json ----

TEST_F(SidecarTest, KernelConfigRejectsDuplicateFuncIdAndKernelName) {
  fs::path dir = l2();
  edit_json(dir / kKernelConfigFile, [](Json& j) {
    Json second = j["kernels"][0];
    second["name"] = "vadd2";
    j["kernels"].push_back(second);
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { KernelConfig::load(dir); }, "kernel_config.json",
                                     "kernels[1].func_id"));
  edit_json(dir / kKernelConfigFile, [](Json& j) {
    j["kernels"][1]["func_id"] = 1;
    j["kernels"][1]["name"] = "vadd";
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { KernelConfig::load(dir); }, "kernel_config.json",
                                     "kernels[1].name"));
  std::string msg = testing::message_of<ArtifactError>([&] { KernelConfig::load(dir); });
  EXPECT_TRUE(contains(msg, "kernels[0]")) << msg;  // names the first user
  edit_json(dir / kKernelConfigFile, [](Json& j) {
    j["kernels"][1]["name"] = "vadd2";
    j["kernels"][1]["func_id"] = -1;
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { KernelConfig::load(dir); }, "kernel_config.json",
                                     "kernels[1].func_id"));
}

TEST_F(SidecarTest, KernelConfigRejectsDuplicateOrEmptyOrchestrations) {
  fs::path dir = l2();
  edit_json(dir / kKernelConfigFile,
            [](Json& j) { j["orchestrations"].push_back(j["orchestrations"][0]); });
  EXPECT_TRUE(FailsWithArtifactError([&] { KernelConfig::load(dir); }, "kernel_config.json",
                                     "orchestrations[1].name"));
  edit_json(dir / kKernelConfigFile, [](Json& j) { j["orchestrations"] = Json::array(); });
  EXPECT_TRUE(FailsWithArtifactError([&] { KernelConfig::load(dir); }, "kernel_config.json",
                                     "orchestrations"));
}

TEST_F(SidecarTest, KernelConfigRejectsBadCoreTypeRuntimeAndFunctionName) {
  fs::path dir = l2();
  edit_json(dir / kKernelConfigFile, [](Json& j) { j["kernels"][0]["core_type"] = "aicpu"; });
  EXPECT_TRUE(FailsWithArtifactError([&] { KernelConfig::load(dir); }, "kernel_config.json",
                                     "kernels[0].core_type"));
  // The source must live under kernels/<core_type>/.
  edit_json(dir / kKernelConfigFile, [](Json& j) { j["kernels"][0]["core_type"] = "aic"; });
  EXPECT_TRUE(FailsWithArtifactError([&] { KernelConfig::load(dir); }, "kernel_config.json",
                                     "kernels[0].source"));
  edit_json(dir / kKernelConfigFile, [](Json& j) {
    j["kernels"][0]["core_type"] = "aiv";
    j["runtime"] = "host_build_graph";
  });
  EXPECT_TRUE(
      FailsWithArtifactError([&] { KernelConfig::load(dir); }, "kernel_config.json", "runtime"));
  edit_json(dir / kKernelConfigFile, [](Json& j) {
    j["runtime"] = "tensormap_and_ringbuffer";
    j["orchestrations"][0]["function_name"] = "orchestration-entry";
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { KernelConfig::load(dir); }, "kernel_config.json",
                                     "orchestrations[0].function_name"));
  edit_json(dir / kKernelConfigFile, [](Json& j) {
    j["orchestrations"][0]["function_name"] = "orchestration_entry";
    j["aicpu_thread_num"] = 0;
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { KernelConfig::load(dir); }, "kernel_config.json",
                                     "aicpu_thread_num"));
}

TEST_F(SidecarTest, KernelConfigRejectsBadSignatureKind) {
  fs::path dir = l2();
  edit_json(dir / kKernelConfigFile, [](Json& j) { j["kernels"][0]["signature"][2] = "Output"; });
  EXPECT_TRUE(FailsWithArtifactError([&] { KernelConfig::load(dir); }, "kernel_config.json",
                                     "kernels[0].signature[2]"));
}

TEST_F(SidecarTest, KernelConfigRejectsMissingSource) {
  fs::path dir = l2();
  fs::remove(dir / "kernels/aiv/vadd.cpp");
  EXPECT_TRUE(FailsWithArtifactError([&] { KernelConfig::load(dir); }, "kernel_config.json",
                                     "kernels[0].source"));
  std::string msg = testing::message_of<ArtifactError>([&] { KernelConfig::load(dir); });
  EXPECT_TRUE(contains(msg, "does not exist")) << msg;
}

TEST_F(SidecarTest, KernelConfigRejectsSourceOutsideItsDirectory) {
  fs::path dir = l2();
  edit_json(dir / kKernelConfigFile,
            [](Json& j) { j["orchestrations"][0]["source"] = "kernels/aiv/vadd.cpp"; });
  EXPECT_TRUE(FailsWithArtifactError([&] { KernelConfig::load(dir); }, "kernel_config.json",
                                     "orchestrations[0].source"));
}

TEST_F(SidecarTest, KernelConfigRejectsAbsolutePath) {
  fs::path dir = l2();
  const std::string absolute = fs::absolute(dir / "kernels/aiv/vadd.cpp").string();
  edit_json(dir / kKernelConfigFile, [&](Json& j) { j["kernels"][0]["source"] = absolute; });
  EXPECT_TRUE(FailsWithArtifactError([&] { KernelConfig::load(dir); }, "kernel_config.json",
                                     "kernels[0].source"));
  EXPECT_TRUE(contains(testing::message_of<ArtifactError>([&] { KernelConfig::load(dir); }),
                       "is absolute"));
}

TEST_F(SidecarTest, KernelConfigRejectsDotDotPath) {
  fs::path dir = l2();
  edit_json(dir / kKernelConfigFile,
            [](Json& j) { j["kernels"][0]["source"] = "kernels/aiv/../aiv/vadd.cpp"; });
  EXPECT_TRUE(FailsWithArtifactError([&] { KernelConfig::load(dir); }, "kernel_config.json",
                                     "kernels[0].source"));
  EXPECT_TRUE(
      contains(testing::message_of<ArtifactError>([&] { KernelConfig::load(dir); }), "'..'"));
}

TEST_F(SidecarTest, KernelConfigRejectsSymlinkEscapingTheDirectory) {
  fs::path dir = l2();
  const fs::path outside = scratch_.path() / "outside.cpp";
  testing::spit(outside, "// not part of the build\n");
  fs::remove(dir / "kernels/aiv/vadd.cpp");
  fs::create_symlink(outside, dir / "kernels/aiv/vadd.cpp");
  EXPECT_TRUE(FailsWithArtifactError([&] { KernelConfig::load(dir); }, "kernel_config.json",
                                     "kernels[0].source"));
  EXPECT_TRUE(contains(testing::message_of<ArtifactError>([&] { KernelConfig::load(dir); }),
                       "symbolic link"));
  // A directory link leading out is caught as well.
  fs::path dir2 = scratch_.copy_of(l2_fixture(), "l2b");
  fs::rename(dir2 / "orchestration", scratch_.path() / "moved_orchestration");
  fs::create_directory_symlink(scratch_.path() / "moved_orchestration", dir2 / "orchestration");
  EXPECT_TRUE(FailsWithArtifactError([&] { KernelConfig::load(dir2); }, "kernel_config.json",
                                     "orchestrations[0].source"));
}

TEST_F(SidecarTest, SymlinkInsideTheDirectoryIsAccepted) {
  fs::path dir = l2();
  fs::rename(dir / "kernels/aiv/vadd.cpp", dir / "kernels/aiv/vadd_real.cpp");
  fs::create_symlink("vadd_real.cpp", dir / "kernels/aiv/vadd.cpp");
  EXPECT_NO_THROW(KernelConfig::load(dir));
}

// ---- distributed_meta.json ----

TEST_F(SidecarTest, DeviceIdsMustBeNonEmptyDistinctAndOnePerRank) {
  fs::path dir = l3();
  const fs::path file = dir / kDistributedMetaFile;
  edit_json(file, [](Json& j) { j["distributed_config"]["device_ids"] = Json::array(); });
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedMeta::load(dir); }, "distributed_meta.json",
                                     "distributed_config.device_ids"));
  edit_json(file,
            [](Json& j) { j["distributed_config"]["device_ids"] = {0, 1, 2, 3, 4, 5, 6, 3}; });
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedMeta::load(dir); }, "distributed_meta.json",
                                     "distributed_config.device_ids[7]"));
  edit_json(file, [](Json& j) { j["distributed_config"]["device_ids"] = {0, 1, 2, 3}; });
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedMeta::load(dir); }, "distributed_meta.json",
                                     "distributed_config.device_ids"));
  std::string msg = testing::message_of<ArtifactError>([&] { DistributedMeta::load(dir); });
  EXPECT_TRUE(contains(msg, "world_size is 8")) << msg;
  edit_json(file,
            [](Json& j) { j["distributed_config"]["device_ids"] = {0, 1, 2, 3, 4, 5, 6, -7}; });
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedMeta::load(dir); }, "distributed_meta.json",
                                     "distributed_config.device_ids[7]"));
}

TEST_F(SidecarTest, DistributedMetaRejectsBadWorldAndConfig) {
  fs::path dir = l3();
  const fs::path file = dir / kDistributedMetaFile;
  edit_json(file, [](Json& j) { j["world_size"] = 0; });
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedMeta::load(dir); }, "distributed_meta.json",
                                     "world_size"));
  edit_json(file, [](Json& j) {
    j["world_size"] = 8;
    j["distributed_config"]["num_sub_workers"] = -1;
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedMeta::load(dir); }, "distributed_meta.json",
                                     "distributed_config.num_sub_workers"));
  edit_json(file, [](Json& j) {
    j["distributed_config"]["num_sub_workers"] = 0;
    j["distributed_config"]["ring_size"] = 4;
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { DistributedMeta::load(dir); }, "distributed_meta.json",
                                     "distributed_config.ring_size"));
  edit_json(file, [](Json& j) {
    j["distributed_config"].erase("ring_size");
    j["platform"] = "a5";
  });
  EXPECT_TRUE(
      FailsWithArtifactError([&] { DistributedMeta::load(dir); }, "distributed_meta.json", "arch"));
}

// ---- orchestration/host_orch.json ----

TEST_F(SidecarTest, WindowBytesMustMatchShapeAndDtype) {
  fs::path dir = l3();
  edit_json(dir / kHostOrchFile, [](Json& j) { j["windows"][0]["bytes"] = 1000; });
  EXPECT_TRUE(FailsWithArtifactError([&] { HostOrch::load(dir); }, "orchestration/host_orch.json",
                                     "windows[0].bytes"));
  std::string msg = testing::message_of<ArtifactError>([&] { HostOrch::load(dir); });
  EXPECT_TRUE(contains(msg, "1024")) << msg;
  edit_json(dir / kHostOrchFile, [](Json& j) {
    j["windows"][0]["bytes"] = 1024;
    j["windows"][1]["dtype"] = "i33";
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { HostOrch::load(dir); }, "orchestration/host_orch.json",
                                     "windows[1].dtype"));
}

TEST_F(SidecarTest, WindowsNeedUniqueNamesAndDistinctRanks) {
  fs::path dir = l3();
  edit_json(dir / kHostOrchFile, [](Json& j) { j["windows"][1]["name"] = "data"; });
  EXPECT_TRUE(FailsWithArtifactError([&] { HostOrch::load(dir); }, "orchestration/host_orch.json",
                                     "windows[1].name"));
  edit_json(dir / kHostOrchFile, [](Json& j) {
    j["windows"][1]["name"] = "signal";
    j["windows"][1]["ranks"] = {0, 1, 1};
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { HostOrch::load(dir); }, "orchestration/host_orch.json",
                                     "windows[1].ranks[2]"));
  edit_json(dir / kHostOrchFile, [](Json& j) { j["windows"][1]["ranks"] = Json::array(); });
  EXPECT_TRUE(FailsWithArtifactError([&] { HostOrch::load(dir); }, "orchestration/host_orch.json",
                                     "windows[1].ranks"));
}

TEST_F(SidecarTest, DispatchArgumentsAreCheckedPerKind) {
  fs::path dir = l3();
  const fs::path file = dir / kHostOrchFile;
  edit_json(file, [](Json& j) { j["dispatches"][2]["args"][2]["window"] = "dat"; });
  EXPECT_TRUE(FailsWithArtifactError([&] { HostOrch::load(dir); }, "orchestration/host_orch.json",
                                     "dispatches[2].args[2].window"));
  // A dispatch's rank must be a member of the windows it binds.
  edit_json(file, [](Json& j) {
    j["dispatches"][2]["args"][2]["window"] = "data";
    j["windows"][0]["ranks"] = {0, 1, 3, 4, 5, 6, 7};
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { HostOrch::load(dir); }, "orchestration/host_orch.json",
                                     "dispatches[2].args[2].window"));
  edit_json(file, [](Json& j) {
    j["windows"][0]["ranks"] = {0, 1, 2, 3, 4, 5, 6, 7};
    j["dispatches"][0]["args"][2]["param"] = "x";  // a host field on a window argument
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { HostOrch::load(dir); }, "orchestration/host_orch.json",
                                     "dispatches[0].args[2].param"));
  edit_json(file, [](Json& j) {
    j["dispatches"][0]["args"][2].erase("param");
    j["dispatches"][0]["args"][0]["kind"] = "tensor";
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { HostOrch::load(dir); }, "orchestration/host_orch.json",
                                     "dispatches[0].args[0].kind"));
  edit_json(file, [](Json& j) {
    j["dispatches"][0]["args"][0]["kind"] = "host";
    j["dispatches"][0]["args"][0]["offsets"] = {0, 0};
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { HostOrch::load(dir); }, "orchestration/host_orch.json",
                                     "dispatches[0].args[0].shape"));
  edit_json(file, [](Json& j) { j["dispatches"][0]["args"][0]["offsets"] = {0, -1, 0}; });
  EXPECT_TRUE(FailsWithArtifactError([&] { HostOrch::load(dir); }, "orchestration/host_orch.json",
                                     "dispatches[0].args[0].offsets"));
  edit_json(file, [](Json& j) {
    j["dispatches"][0]["args"][0]["offsets"] = {0, 0, 0};
    j["dispatches"][0]["args"][1] = Json{{"kind", "scalar"}, {"value", 1.5}};
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { HostOrch::load(dir); }, "orchestration/host_orch.json",
                                     "dispatches[0].args[1].value"));
}

TEST_F(SidecarTest, HostOrchNeedsDispatchesWithRanksAndPrograms) {
  fs::path dir = l3();
  const fs::path file = dir / kHostOrchFile;
  edit_json(file, [](Json& j) { j["dispatches"][4]["rank"] = -4; });
  EXPECT_TRUE(FailsWithArtifactError([&] { HostOrch::load(dir); }, "orchestration/host_orch.json",
                                     "dispatches[4].rank"));
  edit_json(file, [](Json& j) {
    j["dispatches"][4]["rank"] = 4;
    j["dispatches"][4]["program"] = "";
  });
  EXPECT_TRUE(FailsWithArtifactError([&] { HostOrch::load(dir); }, "orchestration/host_orch.json",
                                     "dispatches[4].program"));
  edit_json(file, [](Json& j) { j["dispatches"] = Json::array(); });
  EXPECT_TRUE(FailsWithArtifactError([&] { HostOrch::load(dir); }, "orchestration/host_orch.json",
                                     "dispatches"));
}

// ---- golden/golden.json ----

TEST_F(SidecarTest, GoldenOutputMustBeAnOutParameter) {
  fs::path dir = l2();
  const auto params = CompiledMeta::load(dir).params;
  edit_json(dir / kGoldenFile, [](Json& j) { j["outputs"] = Json::array({"a"}); });
  EXPECT_TRUE(FailsWithArtifactError([&] { GoldenSpec::load(dir, params); }, "golden/golden.json",
                                     "outputs[0]"));
  EXPECT_TRUE(contains(testing::message_of<ArtifactError>([&] { GoldenSpec::load(dir, params); }),
                       "In parameter"));
  edit_json(dir / kGoldenFile, [](Json& j) { j["outputs"] = Json::array({"z"}); });
  EXPECT_TRUE(FailsWithArtifactError([&] { GoldenSpec::load(dir, params); }, "golden/golden.json",
                                     "outputs[0]"));
  edit_json(dir / kGoldenFile, [](Json& j) { j["outputs"] = Json::array({"c", "c"}); });
  EXPECT_TRUE(FailsWithArtifactError([&] { GoldenSpec::load(dir, params); }, "golden/golden.json",
                                     "outputs[1]"));
  edit_json(dir / kGoldenFile, [](Json& j) { j["outputs"] = Json::array(); });
  EXPECT_TRUE(FailsWithArtifactError([&] { GoldenSpec::load(dir, params); }, "golden/golden.json",
                                     "outputs"));
}

TEST_F(SidecarTest, GoldenToleranceMustBeNonNegative) {
  fs::path dir = l2();
  const auto params = CompiledMeta::load(dir).params;
  edit_json(dir / kGoldenFile, [](Json& j) { j["atol"] = -1e-3; });
  EXPECT_TRUE(
      FailsWithArtifactError([&] { GoldenSpec::load(dir, params); }, "golden/golden.json", "atol"));
  edit_json(dir / kGoldenFile, [](Json& j) {
    j["atol"] = 0;  // an integer is a number
    j["rtol"] = "1e-6";
  });
  EXPECT_TRUE(
      FailsWithArtifactError([&] { GoldenSpec::load(dir, params); }, "golden/golden.json", "rtol"));
}

TEST_F(SidecarTest, GoldenNeedsExpectedAndInputFiles) {
  fs::path dir = l2();
  const auto params = CompiledMeta::load(dir).params;
  fs::remove(dir / "golden/expected/c.npy");
  EXPECT_TRUE(FailsWithArtifactError([&] { GoldenSpec::load(dir, params); }, "golden/golden.json",
                                     "outputs[0]"));
  EXPECT_TRUE(contains(testing::message_of<ArtifactError>([&] { GoldenSpec::load(dir, params); }),
                       "golden/expected/c.npy is missing"));
  fs::path dir2 = scratch_.copy_of(l2_fixture(), "l2b");
  fs::remove(dir2 / "golden/inputs/b.npy");
  EXPECT_TRUE(
      FailsWithArtifactError([&] { GoldenSpec::load(dir2, params); }, "golden/inputs/b.npy", ""));
}

TEST_F(SidecarTest, GoldenIsOptional) {
  fs::path dir = l2();
  fs::remove_all(dir / kGoldenDir);
  EXPECT_FALSE(GoldenSpec::load_if_present(dir, CompiledMeta::load(dir).params).has_value());
}

// ---- write() then load() ----

TEST_F(SidecarTest, CompiledMetaRoundTrips) {
  fs::path dir = l2();
  CompiledMeta meta = CompiledMeta::load(dir);
  meta.params.push_back(ParamInfo{"d", Direction::kInOut, {-1, 4}, DType::kI64});
  meta.num_return_types = 2;
  meta.platform = "a5sim";
  meta.arch = "a5";
  meta.write(dir);
  EXPECT_EQ(CompiledMeta::load(dir), meta);
}

TEST_F(SidecarTest, KernelConfigRoundTrips) {
  fs::path dir = l2();
  KernelConfig config = KernelConfig::load(dir);
  config.aicpu_thread_num = 3;
  config.kernels.push_back(KernelInfo{7,
                                      "vadd_scaled",
                                      CoreType::kAiv,
                                      "kernels/aiv/vadd.cpp",
                                      {ArgKind::kIn, ArgKind::kInOut, ArgKind::kScalar}});
  config.write(dir);
  EXPECT_EQ(KernelConfig::load(dir), config);
  EXPECT_EQ(KernelConfig::load(dir).find_kernel(7)->name, "vadd_scaled");
}

TEST_F(SidecarTest, DistributedMetaRoundTrips) {
  fs::path dir = l3();
  DistributedMeta meta = DistributedMeta::load(dir);
  meta.distributed_config.device_ids = {7, 6, 5, 4, 3, 2, 1, 0};
  meta.distributed_config.num_sub_workers = 2;
  meta.write(dir);
  EXPECT_EQ(DistributedMeta::load(dir), meta);
}

TEST_F(SidecarTest, HostOrchRoundTrips) {
  fs::path dir = l3();
  HostOrch plan = HostOrch::load(dir);
  plan.dispatches[0].args.push_back(HostArg::scalar(-42));
  plan.windows.push_back(WindowInfo{"scratch", DType::kF16, {2, 3}, 12, {0, 7}});
  plan.write(dir);
  EXPECT_EQ(HostOrch::load(dir), plan);
}

TEST_F(SidecarTest, GoldenSpecRoundTrips) {
  fs::path dir = l2();
  const auto params = CompiledMeta::load(dir).params;
  GoldenSpec golden = GoldenSpec::load(dir, params);
  golden.rtol = 1e-3;
  golden.atol = 0.5;
  golden.seed = 1234;
  golden.write(dir);
  EXPECT_EQ(GoldenSpec::load(dir, params), golden);
}

TEST_F(SidecarTest, WriteIsAtomicAndLeavesNoTemporaries) {
  fs::path dir = l2();
  CompiledMeta::load(dir).write(dir);
  for (const auto& entry : fs::directory_iterator(dir))
    EXPECT_FALSE(contains(entry.path().filename().string(), ".tmp")) << entry.path();
}

// ---- helpers ----

TEST(SidecarChecksTest, PlatformsAndIdentifiers) {
  for (const char* p : {"a2a3sim", "a2a3", "a5sim", "a5"}) EXPECT_TRUE(is_known_platform(p));
  EXPECT_FALSE(is_known_platform("a5simx"));
  EXPECT_EQ(arch_of_platform("a2a3sim"), "a2a3");
  EXPECT_EQ(arch_of_platform("a5"), "a5");
  EXPECT_TRUE(is_c_identifier("orchestration_entry"));
  EXPECT_FALSE(is_c_identifier("1abc"));
  EXPECT_FALSE(is_c_identifier(""));
}

// ---- values that would wrap or that the JSON parser itself rejects ----

// The file and field an ArtifactError of `load` names, and its message.
struct Rejection {
  std::string file, field, message;
};
Rejection rejection_of(const std::function<void()>& load) {
  try {
    load();
  } catch (const ArtifactError& e) {
    return {e.file(), e.field(), e.what()};
  }
  return {"(no ArtifactError)", "", ""};
}

TEST_F(SidecarTest, ShapeExtentsBeyondInt64AreRejectedInsteadOfWrappingToDynamic) {
  fs::path dir = l2();
  edit_json(dir / kCompiledMetaFile,
            [](Json& j) { j["params"][0]["shape"] = Json::array({UINT64_MAX}); });
  const Rejection r = rejection_of([&] { CompiledMeta::load(dir); });
  EXPECT_TRUE(contains(r.file, "compiled_meta.json")) << r.file;
  EXPECT_TRUE(contains(r.field, "shape")) << r.field;
  EXPECT_TRUE(contains(r.message, "18446744073709551615")) << r.message;
  EXPECT_TRUE(contains(r.message, "too large")) << r.message;
}

TEST_F(SidecarTest, AicpuThreadNumBeyondIntIsRejected) {
  fs::path dir = l2();
  edit_json(dir / kKernelConfigFile, [](Json& j) { j["aicpu_thread_num"] = 4294967297LL; });
  const Rejection r = rejection_of([&] { KernelConfig::load(dir); });
  EXPECT_TRUE(contains(r.file, "kernel_config.json")) << r.file;
  EXPECT_EQ(r.field, "aicpu_thread_num");
  EXPECT_TRUE(contains(r.message, "4294967297")) << r.message;
}

TEST_F(SidecarTest, ANumberBeyondADoubleNamesTheFileAndTheField) {
  fs::path dir = l2();
  const fs::path config = dir / kKernelConfigFile;
  std::string text = testing::slurp(config);
  const std::string from = "\"aicpu_thread_num\": 1";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), "\"aicpu_thread_num\": 1e400");
  testing::spit(config, text);
  const Rejection r = rejection_of([&] { KernelConfig::load(dir); });
  EXPECT_TRUE(contains(r.file, "kernel_config.json")) << r.file;
  EXPECT_EQ(r.field, "aicpu_thread_num");
  EXPECT_TRUE(contains(r.message, "out of range")) << r.message;
}

TEST_F(SidecarTest, ADirectoryOrAFifoInPlaceOfASidecarIsNamedAsSuch) {
  fs::path dir = l2();
  const fs::path meta = dir / kCompiledMetaFile;
  fs::remove(meta);
  fs::create_directory(meta);
  Rejection r = rejection_of([&] { CompiledMeta::load(dir); });
  EXPECT_TRUE(contains(r.file, "compiled_meta.json")) << r.file;
  EXPECT_TRUE(contains(r.message, "is a directory")) << r.message;
  fs::remove(meta);
  ASSERT_EQ(::mkfifo(meta.c_str(), 0600), 0);
  r = rejection_of([&] { CompiledMeta::load(dir); });  // must not block on the FIFO
  EXPECT_TRUE(contains(r.message, "is a FIFO")) << r.message;
}

}  // namespace
}  // namespace pypto
