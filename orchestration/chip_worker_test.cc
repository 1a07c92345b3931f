// ChipWorker on the hand-written L2 fixture: assemble, load, run, compare.
#include "pypto/chip_worker.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "pypto/error.h"
#include "pypto/golden_spec.h"
#include "pypto/npy.h"
#include "tests/fixture_copy.h"

namespace pypto {
namespace {

namespace fs = std::filesystem;

// The test binary's one cleanup of its scratch: the fixture copies of this file
// and tile_header_test.cc (tests/fixture_copy.h).
[[maybe_unused]] ::testing::Environment* const kCleanup =
    ::testing::AddGlobalTestEnvironment(new testing_support::ScratchCleanup);

std::vector<Tensor> golden_args(const CompiledProgram& program) {
  std::vector<Tensor> args;
  for (const auto& p : program.params()) {
    if (p.is_input())
      args.push_back(read_npy(program.dir() / "golden/inputs" / (p.name + ".npy")));
    else
      args.push_back(Tensor::empty(p.dtype, p.shape));
  }
  return args;
}

TEST(ChipWorkerTest, RunsVectorAddAndMatchesGolden) {
  auto program =
      CompiledProgram::from_dir(testing_support::scratch_fixture_copy("l2/vector_add", "vadd"));
  auto args = golden_args(program);
  ChipWorker worker;
  auto result = worker.run(program, args);
  EXPECT_EQ(result.num_tasks, 4);
  Tensor expected = read_npy(program.dir() / "golden/expected/c.npy");
  for (int i = 0; i < 1024; ++i)
    ASSERT_EQ(args[2].data_as<float>()[i], expected.data_as<float>()[i]) << "index " << i;
  // A second run reuses the loaded binaries.
  auto again = worker.run(program, args);
  EXPECT_EQ(again.num_tasks, 4);
}

TEST(ChipWorkerTest, APreparedProgramDoesNoBinaryCacheWorkPerRun) {
  auto program =
      CompiledProgram::from_dir(testing_support::scratch_fixture_copy("l2/vector_add", "prepared"));
  auto args = golden_args(program);
  ChipWorker worker;
  worker.prepare(program);
  // Without the sources the binary cache could not even be checked: the runs use
  // what prepare() loaded.
  fs::remove_all(program.dir() / "kernels");
  fs::remove_all(program.dir() / "orchestration");
  for (int i = 0; i < 2; ++i) {
    auto result = worker.run(program, args);
    EXPECT_EQ(result.num_tasks, 4);
  }
  Tensor expected = read_npy(program.dir() / "golden/expected/c.npy");
  EXPECT_EQ(args[2].data_as<float>()[10], expected.data_as<float>()[10]);
  // An unprepared worker checks the cache, and says what is missing.
  ChipWorker fresh;
  EXPECT_ANY_THROW(fresh.run(program, args));
}

TEST(ChipWorkerTest, CallingTheProgramForwardsToAWorker) {
  auto program =
      CompiledProgram::from_dir(testing_support::scratch_fixture_copy("l2/vector_add", "call"));
  auto args = golden_args(program);
  call(program, args);
  EXPECT_EQ(args[2].data_as<float>()[10], 10 * 0.5f + (1000 - 10));
}

TEST(ChipWorkerTest, ConfigDecidesThePlatform) {
  auto program =
      CompiledProgram::from_dir(testing_support::scratch_fixture_copy("l2/vector_add", "onboard"));
  auto args = golden_args(program);
  // PyPTO's precedence: a passed config carries the platform; onboard cannot run here.
  try {
    call(program, args, RunConfig::from_platform("a2a3"));
    FAIL() << "expected InfraError";
  } catch (const InfraError& e) {
    EXPECT_NE(std::string(e.what()).find("a2a3"), std::string::npos) << e.what();
  }
}

TEST(ChipWorkerTest, WrongArgumentsAreUsageErrors) {
  auto program =
      CompiledProgram::from_dir(testing_support::scratch_fixture_copy("l2/vector_add", "args"));
  std::vector<Tensor> args{Tensor::empty(DType::kF32, {1024}), Tensor::empty(DType::kF32, {1024}),
                           Tensor::empty(DType::kI32, {1024})};
  ChipWorker worker;
  try {
    worker.run(program, args);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("argument 'c' must be"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pypto
