#include "launch/mpirun_command.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

#include "launch/launch_test_util.h"
#include "pypto/error.h"
#include "tests/scoped_env.h"

namespace pypto::launch {
namespace {

using testing::TempDir;
using testing::write_executable;
using testing::write_file;
using testing_support::ScopedEnv;
using Words = std::vector<std::string>;
namespace fs = std::filesystem;

size_t count(const Words& words, const std::string& word) {
  return static_cast<size_t>(std::count(words.begin(), words.end(), word));
}

// Index of `word` in `words`, words.size() when absent.
size_t index_of(const Words& words, const std::string& word) {
  return static_cast<size_t>(std::find(words.begin(), words.end(), word) - words.begin());
}

bool has_pair(const Words& words, const std::string& first, const std::string& second) {
  for (size_t i = 0; i + 1 < words.size(); ++i)
    if (words[i] == first && words[i + 1] == second) return true;
  return false;
}

class MpirunCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mpirun_ = write_executable(dir_ / "mpirun", "#!/bin/sh\nexit 0\n");
    rank_ = write_executable(dir_ / "pypto-rank", "#!/bin/sh\nexit 0\n");
    env_.unset("PYPTO_MPIRUN");
    env_.unset("PYPTO_RANK");
    env_.unset("OMPI_MCA_hwloc_base_binding_policy");
    env_.unset("OMPI_MCA_rmaps_base_oversubscribe");
    options_.world = 8;
    options_.coord_endpoint = "tcp://127.0.0.1:40000";
    options_.mpirun = mpirun_;
    options_.rank_binary = rank_;
  }
  TempDir dir_;
  ScopedEnv env_;
  fs::path mpirun_;
  fs::path rank_;
  MpirunOptions options_;
};

TEST_F(MpirunCommandTest, DefaultCommandOnOneHost) {
  options_.agent_args = {"--wait-timeout", "5"};
  const MpirunCommand command = mpirun_command(options_);
  const Words& argv = command.argv;
  ASSERT_FALSE(argv.empty());
  EXPECT_EQ(argv[0], mpirun_.string());
  EXPECT_EQ(count(argv, "--oversubscribe"), 1u);
  EXPECT_TRUE(has_pair(argv, "--bind-to", "none"));
  // The tail: -n <world> <rank binary> --coord <endpoint> <agent args>.
  const Words tail(argv.end() - 7, argv.end());
  EXPECT_EQ(tail, (Words{"-n", "8", rank_.string(), "--coord", "tcp://127.0.0.1:40000",
                         "--wait-timeout", "5"}));
  EXPECT_EQ(mpirun_argv(options_), argv);
}

TEST_F(MpirunCommandTest, RootGetsTheFlagAndTheEnvironment) {
  if (::geteuid() != 0) GTEST_SKIP() << "only as root";
  const MpirunCommand command = mpirun_command(options_);
  EXPECT_EQ(count(command.argv, "--allow-run-as-root"), 1u);
  EXPECT_EQ(count(command.env, "OMPI_ALLOW_RUN_AS_ROOT=1"), 1u);
  EXPECT_EQ(count(command.env, "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"), 1u);
  // The user's own flag is not repeated.
  options_.mpirun_args = {"--allow-run-as-root"};
  EXPECT_EQ(count(mpirun_argv(options_), "--allow-run-as-root"), 1u);
}

TEST_F(MpirunCommandTest, UserArgumentsComeBeforeTheRankCountAndSuppressOurFlags) {
  options_.mpirun_args = {"--bind-to", "core", "--map-by", "slot:NOOVERSUBSCRIBE",
                          "--mca",     "btl",  "self,tcp"};
  const Words argv = mpirun_argv(options_);
  EXPECT_EQ(count(argv, "--oversubscribe"), 0u);
  EXPECT_FALSE(has_pair(argv, "--bind-to", "none"));
  EXPECT_TRUE(has_pair(argv, "--bind-to", "core"));
  EXPECT_LT(index_of(argv, "self,tcp"), index_of(argv, "-n"));
  EXPECT_LT(index_of(argv, "-n"), index_of(argv, rank_.string()));
}

TEST_F(MpirunCommandTest, EachSpellingOfAnOptionSuppressesIt) {
  for (const Words& user :
       {Words{"-bind-to", "socket"}, Words{"--bind-to=core"}, Words{"--cpu-set", "0,1"},
        Words{"--mca", "hwloc_base_binding_policy", "core"}}) {
    options_.mpirun_args = user;
    EXPECT_EQ(count(mpirun_argv(options_), "none"), 0u) << user[0];
  }
  for (const Words& user : {Words{"-oversubscribe"}, Words{"--nooversubscribe"},
                            Words{"--map-by=node:oversubscribe"}}) {
    options_.mpirun_args = user;
    const Words argv = mpirun_argv(options_);
    EXPECT_EQ(count(argv, "--oversubscribe"), 0u) << user[0];
    EXPECT_EQ(count(argv, user[0]), 1u) << user[0];
  }
  options_.mpirun_args = {};
  env_.set("OMPI_MCA_hwloc_base_binding_policy", "core");
  EXPECT_FALSE(has_pair(mpirun_argv(options_), "--bind-to", "none"));
}

TEST_F(MpirunCommandTest, HostfilePassesThroughAndOversubscribesOnlyBeyondItsSlots) {
  const fs::path hostfile = dir_ / "hosts";
  write_file(hostfile, "# two nodes\nnode0 slots=4\nnode1 slots=2 max_slots=8\n");
  options_.hostfile = hostfile;
  options_.world = 6;
  Words argv = mpirun_argv(options_);
  EXPECT_TRUE(has_pair(argv, "--hostfile", hostfile.string()));
  EXPECT_EQ(count(argv, "--oversubscribe"), 0u);
  options_.world = 7;
  EXPECT_EQ(count(mpirun_argv(options_), "--oversubscribe"), 1u);
  // A host without slots= makes the total unknown: left to mpirun and the user.
  write_file(hostfile, "node0 slots=4\nnode1\n");
  EXPECT_EQ(count(mpirun_argv(options_), "--oversubscribe"), 0u);
  // Hosts named in the user's arguments: not a single host either.
  options_.hostfile.reset();
  options_.mpirun_args = {"--host", "node0,node1"};
  EXPECT_EQ(count(mpirun_argv(options_), "--oversubscribe"), 0u);
}

TEST_F(MpirunCommandTest, EnvironmentIsExportedByNameWithValuesOutOfTheArgv) {
  options_.env = {"PYPTO_RUNTIME_LOG=debug", "PYPTO_COMM=rma"};
  const MpirunCommand command = mpirun_command(options_);
  EXPECT_TRUE(has_pair(command.argv, "-x", "PYPTO_RUNTIME_LOG"));
  EXPECT_TRUE(has_pair(command.argv, "-x", "PYPTO_COMM"));
  EXPECT_EQ(count(command.argv, "PYPTO_RUNTIME_LOG=debug"), 0u);
  EXPECT_EQ(count(command.env, "PYPTO_RUNTIME_LOG=debug"), 1u);
  EXPECT_EQ(count(command.env, "PYPTO_COMM=rma"), 1u);
  EXPECT_LT(index_of(command.argv, "PYPTO_COMM"), index_of(command.argv, "-n"));
}

TEST_F(MpirunCommandTest, BadRequestsAreRefused) {
  options_.mpirun_args = {"-np", "4"};
  EXPECT_THROW(mpirun_argv(options_), UsageError);
  options_.mpirun_args = {"--machinefile", "hosts"};
  options_.hostfile = dir_ / "hosts";
  EXPECT_THROW(mpirun_argv(options_), UsageError);
  options_.mpirun_args = {};
  options_.hostfile = dir_ / "no-such-hostfile";
  EXPECT_THROW(mpirun_argv(options_), InfraError);
  options_.hostfile.reset();
  options_.env = {"=x"};
  EXPECT_THROW(mpirun_argv(options_), UsageError);
  options_.env = {"NO_VALUE"};
  EXPECT_THROW(mpirun_argv(options_), UsageError);
  options_.env = {};
  options_.world = 0;
  EXPECT_THROW(mpirun_argv(options_), InfraError);
}

TEST_F(MpirunCommandTest, FindMpirunPrecedence) {
  const fs::path from_env = write_executable(dir_ / "env-mpirun", "#!/bin/sh\n");
  env_.set("PYPTO_MPIRUN", from_env.string());
  EXPECT_EQ(find_mpirun(mpirun_), mpirun_);
  EXPECT_EQ(find_mpirun(std::nullopt), from_env);
  env_.unset("PYPTO_MPIRUN");
  if (!build_time_mpirun().empty()) {
    EXPECT_EQ(find_mpirun(std::nullopt), fs::absolute(build_time_mpirun()).lexically_normal());
  }
  env_.set("PYPTO_MPIRUN", (dir_ / "absent").string());
  try {
    find_mpirun(std::nullopt);
    FAIL() << "expected ToolError";
  } catch (const ToolError& e) {
    EXPECT_NE(std::string(e.what()).find("openmpi-bin"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("PYPTO_MPIRUN"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pypto::launch
