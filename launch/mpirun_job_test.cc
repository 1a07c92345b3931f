// The launcher against the real mpirun the project was configured with: the
// argv mpirun_command builds starts ranks here (as root, more ranks than
// cores), and stopping the job leaves none of them behind.
#include <gtest/gtest.h>
#include <signal.h>

#include "launch/agents.h"
#include "launch/job.h"
#include "launch/job_scratch.h"
#include "launch/launch_test_util.h"
#include "launch/mpirun_command.h"
#include "tests/scoped_env.h"

namespace pypto::launch {
namespace {

using std::chrono::milliseconds;
using testing::process_gone;
using testing::read_file;
using testing::read_pids;
using testing::TempDir;
using testing::write_executable;
using testing_support::ScopedEnv;
namespace fs = std::filesystem;

class MpirunJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(PYPTO_BUILD_MPIEXEC).empty()) GTEST_SKIP() << "no mpiexec at configure time";
    env_.unset("PYPTO_MPIRUN");
    env_.unset("PYPTO_RANK");
    options_.mpirun = fs::path(PYPTO_BUILD_MPIEXEC);
    options_.coord_endpoint = "tcp://127.0.0.1:45678";
    // Open MPI's session directory in a scratch of the test's, as a run's is
    // (launch/job_scratch.h): a killed mpirun cannot leave /tmp/ompi.* behind.
    scratch_ = JobScratch::create({});
    for (const std::string& entry : scratch_.env()) options_.env.push_back(entry);
  }
  Job start() { return start_agents(options_); }
  TempDir dir_;
  ScopedEnv env_;
  JobScratch scratch_;  // removed after the test's job has ended
  MpirunOptions options_;
};

TEST_F(MpirunJobTest, RanksGetTheirArgumentsAndEnvironment) {
  // A fake pypto-rank that records what it was given, one file per rank.
  const std::string out = dir_.path().string();
  options_.rank_binary =
      write_executable(dir_ / "pypto-rank", "#!/bin/sh\necho \"$* $PYPTO_LAUNCH_TEST\" > " + out +
                                                "/rank.$OMPI_COMM_WORLD_RANK\n");
  options_.world = 4;  // more ranks than the 2 cores here: needs --oversubscribe
  options_.agent_args = {"--wait-timeout", "5"};
  options_.env.push_back("PYPTO_LAUNCH_TEST=exported");
  Job job = start();
  const auto status = job.wait_for(std::chrono::seconds(60));
  ASSERT_TRUE(status) << "mpirun did not finish";
  EXPECT_TRUE(status->success()) << "mpirun " << status->describe();
  for (int rank = 0; rank < 4; ++rank)
    EXPECT_EQ(read_file(dir_ / ("rank." + std::to_string(rank))),
              "--coord tcp://127.0.0.1:45678 --wait-timeout 5 exported\n")
        << "rank " << rank;
}

TEST_F(MpirunJobTest, AFailingRankFailsTheJob) {
  options_.rank_binary = write_executable(
      dir_ / "pypto-rank", "#!/bin/sh\n[ \"$OMPI_COMM_WORLD_RANK\" = 1 ] && exit 7\nexit 0\n");
  options_.world = 2;
  Job job = start();
  const auto status = job.wait_for(std::chrono::seconds(60));
  ASSERT_TRUE(status) << "mpirun did not finish";
  EXPECT_FALSE(status->success()) << status->describe();
}

// Ranks that sleep, each writing its pid first; stop() with `grace` must
// leave none behind, whether mpirun gets to clean up or not.
void check_stop_leaves_no_rank(const TempDir& dir, Job job, milliseconds grace) {
  const std::vector<pid_t> ranks = read_pids(dir / "pids", 2);
  ASSERT_EQ(ranks.size(), 2u) << "the ranks did not start";
  for (pid_t pid : ranks) EXPECT_EQ(::kill(pid, 0), 0);
  const ExitStatus status = job.stop(grace);
  EXPECT_FALSE(status.success()) << status.describe();
  EXPECT_TRUE(process_gone(job.pid()));
  for (pid_t pid : ranks) EXPECT_TRUE(process_gone(pid)) << "rank pid " << pid;
  EXPECT_TRUE(job.members().empty());
}

TEST_F(MpirunJobTest, StopLeavesNoRankBehind) {
  options_.rank_binary =
      write_executable(dir_ / "pypto-rank",
                       "#!/bin/sh\necho $$ >> " + (dir_ / "pids").string() + "\nexec sleep 30\n");
  options_.world = 2;
  check_stop_leaves_no_rank(dir_, start(), milliseconds(5000));
}

TEST_F(MpirunJobTest, StopWithoutGraceStillFindsTheRanks) {
  // mpirun is SIGKILLed at once and cannot take its ranks down: they are
  // found through the job's session.
  options_.rank_binary =
      write_executable(dir_ / "pypto-rank", "#!/bin/sh\ntrap '' TERM\necho $$ >> " +
                                                (dir_ / "pids").string() + "\nexec sleep 30\n");
  options_.world = 2;
  check_stop_leaves_no_rank(dir_, start(), milliseconds(0));
}

}  // namespace
}  // namespace pypto::launch
