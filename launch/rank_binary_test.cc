#include "launch/rank_binary.h"

#include <gtest/gtest.h>

#include "launch/launch_test_util.h"
#include "pypto/error.h"
#include "tests/scoped_env.h"

namespace pypto::launch {
namespace {

using testing::TempDir;
using testing::write_executable;
using testing::write_file;
using testing_support::ScopedEnv;
namespace fs = std::filesystem;

constexpr const char* kScript = "#!/bin/sh\nexit 0\n";

class FindRankBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "bin");
    fs::create_directories(dir_ / "build/coordinator");
    fs::create_directories(dir_ / "build/rank_agent");
    fs::create_directories(dir_ / "path");
    env_.unset("PYPTO_RANK");
    env_.set("PATH", (dir_ / "path").string());
  }
  TempDir dir_;
  ScopedEnv env_;
};

TEST_F(FindRankBinaryTest, ExplicitPathWinsOverEverything) {
  const fs::path mine = write_executable(dir_ / "mine", kScript);
  const fs::path env = write_executable(dir_ / "env", kScript);
  write_executable(dir_ / "bin/pypto-rank", kScript);
  env_.set("PYPTO_RANK", env.string());
  EXPECT_EQ(find_rank_binary(mine, dir_ / "bin/pypto-coord"), mine);
}

TEST_F(FindRankBinaryTest, EnvironmentWinsOverTheExecutablesDirectory) {
  const fs::path env = write_executable(dir_ / "env", kScript);
  write_executable(dir_ / "bin/pypto-rank", kScript);
  env_.set("PYPTO_RANK", env.string());
  EXPECT_EQ(find_rank_binary(std::nullopt, dir_ / "bin/pypto-coord"), env);
}

TEST_F(FindRankBinaryTest, NextToTheExecutableThenTheBuildTreeThenPath) {
  const fs::path in_path = write_executable(dir_ / "path/pypto-rank", kScript);
  EXPECT_EQ(find_rank_binary(std::nullopt, dir_ / "bin/pypto-coord"), in_path);
  const fs::path built = write_executable(dir_ / "build/rank_agent/pypto-rank", kScript);
  EXPECT_EQ(find_rank_binary(std::nullopt, dir_ / "build/coordinator/pypto-coord"), built);
  const fs::path installed = write_executable(dir_ / "build/coordinator/pypto-rank", kScript);
  EXPECT_EQ(find_rank_binary(std::nullopt, dir_ / "build/coordinator/pypto-coord"), installed);
}

TEST_F(FindRankBinaryTest, BareNameInTheEnvironmentIsLookedUpInPath) {
  const fs::path in_path = write_executable(dir_ / "path/my-rank", kScript);
  env_.set("PYPTO_RANK", "my-rank");
  EXPECT_EQ(find_rank_binary(std::nullopt, dir_ / "bin/pypto-coord"), in_path);
}

TEST_F(FindRankBinaryTest, AWrongExplicitChoiceIsAnErrorNotAFallThrough) {
  write_executable(dir_ / "path/pypto-rank", kScript);
  write_file(dir_ / "not-executable", kScript);
  env_.set("PYPTO_RANK", (dir_ / "not-executable").string());
  try {
    find_rank_binary(std::nullopt, dir_ / "bin/pypto-coord");
    FAIL() << "expected InfraError";
  } catch (const InfraError& e) {
    EXPECT_NE(std::string(e.what()).find("PYPTO_RANK"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not-executable"), std::string::npos) << e.what();
    EXPECT_EQ(e.exit_code(), ExitCode::kInfra);
  }
  EXPECT_THROW(find_rank_binary(dir_ / "missing", dir_ / "bin/pypto-coord"), InfraError);
}

TEST_F(FindRankBinaryTest, AbsentEverywhereIsAnInfraErrorSayingWhatToDo) {
  try {
    find_rank_binary(std::nullopt, dir_ / "bin/pypto-coord");
    FAIL() << "expected InfraError";
  } catch (const InfraError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find((dir_ / "bin/pypto-rank").string()), std::string::npos) << message;
    EXPECT_NE(message.find("PYPTO_RANK"), std::string::npos) << message;
    EXPECT_EQ(e.exit_code(), ExitCode::kInfra);
  }
}

TEST_F(FindRankBinaryTest, RelativePathsBecomeAbsolute) {
  write_executable(dir_ / "mine", kScript);
  const fs::path cwd = fs::current_path();
  fs::current_path(dir_.path());
  const fs::path found = find_rank_binary(fs::path("./mine"), dir_ / "bin/pypto-coord");
  fs::current_path(cwd);
  EXPECT_TRUE(found.is_absolute());
  EXPECT_EQ(found, fs::path(dir_ / "mine"));
}

}  // namespace
}  // namespace pypto::launch
