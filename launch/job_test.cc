#include "launch/job.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <cstdio>
#include <stdexcept>

#include "launch/launch_test_util.h"
#include "pypto/error.h"

namespace pypto::launch {
namespace {

using testing::eventually;
using testing::process_gone;
using testing::read_file;
using testing::read_pids;
using testing::TempDir;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A shell that starts two background sleeps, writes their pids to `file`
// and waits for them: the grandchildren stop() must reach.
Job start_two_sleepers(const std::filesystem::path& file) {
  const std::string f = file.string();
  return Job::start(
      {"/bin/sh", "-c", "sleep 30 & echo $! >> " + f + "; sleep 30 & echo $! >> " + f + "; wait"});
}

pid_t process_group_of(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  const std::string stat = read_file(path);
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return -1;
  char state;
  int ppid;
  int pgrp = -1;
  std::sscanf(stat.c_str() + paren + 1, " %c %d %d", &state, &ppid, &pgrp);
  return pgrp;
}

double cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

TEST(JobTest, RunsInItsOwnProcessGroupAndSession) {
  Job job = Job::start({"sleep", "30"});
  EXPECT_EQ(job.pgid(), job.pid());
  EXPECT_EQ(::getpgid(job.pid()), job.pid());
  EXPECT_EQ(::getsid(job.pid()), job.pid());
  EXPECT_NE(::getpgid(job.pid()), ::getpgrp());
  EXPECT_FALSE(job.poll());
  EXPECT_GE(job.exit_fd(), 0);
  job.stop(milliseconds(1000));
}

TEST(JobTest, StopKillsTheGrandchildrenToo) {
  TempDir dir;
  Job job = start_two_sleepers(dir / "pids");
  const std::vector<pid_t> sleepers = read_pids(dir / "pids", 2);
  ASSERT_EQ(sleepers.size(), 2u);
  for (pid_t pid : sleepers) EXPECT_EQ(::kill(pid, 0), 0);
  const auto start = Clock::now();
  const ExitStatus status = job.stop(milliseconds(10000));
  EXPECT_LT(Clock::now() - start, milliseconds(5000));  // SIGTERM was enough
  EXPECT_EQ(status.signal, SIGTERM) << status.describe();
  for (pid_t pid : sleepers) EXPECT_TRUE(process_gone(pid)) << pid;
  EXPECT_TRUE(job.members().empty());
}

TEST(JobTest, StopsProcessesThatLeftTheGroupAndOutlivedTheLeader) {
  // The way Open MPI's ranks look: in a process group of their own, and still
  // running after the leader is gone.
  TempDir dir;
  const std::string f = (dir / "pids").string();
  Job job = Job::start({"/bin/sh", "-c",
                        "python3 -c 'import os, time; os.setpgid(0, 0); time.sleep(30)' & "
                        "echo $! > " +
                            f + "; exit 0"});
  const std::vector<pid_t> pids = read_pids(dir / "pids", 1);
  ASSERT_EQ(pids.size(), 1u);
  ASSERT_TRUE(eventually([&] { return process_group_of(pids[0]) == pids[0]; }));
  EXPECT_EQ(job.wait().code, 0);
  EXPECT_EQ(job.members(), std::vector<pid_t>{pids[0]});
  EXPECT_EQ(job.stop(milliseconds(2000)).code, 0);
  EXPECT_TRUE(process_gone(pids[0]));
}

TEST(JobTest, AChildIgnoringSigtermIsKilledAfterTheGrace) {
  TempDir dir;
  const std::string ready = (dir / "ready").string();
  Job job = Job::start({"/bin/sh", "-c", "trap '' TERM; echo $$ > " + ready + "; exec sleep 30"});
  ASSERT_EQ(read_pids(dir / "ready", 1).size(), 1u);
  const auto start = Clock::now();
  const ExitStatus status = job.stop(milliseconds(300));
  const auto took = Clock::now() - start;
  EXPECT_EQ(status.signal, SIGKILL) << status.describe();
  EXPECT_GE(took, milliseconds(300));
  EXPECT_LT(took, milliseconds(5000));
  EXPECT_TRUE(process_gone(job.pid()));
}

TEST(JobTest, ExitStatusesAreDescribed) {
  Job exited = Job::start({"/bin/sh", "-c", "exit 3"});
  const ExitStatus three = exited.wait();
  EXPECT_EQ(three.code, 3);
  EXPECT_EQ(three.signal, 0);
  EXPECT_FALSE(three.success());
  EXPECT_EQ(three.describe(), "exited with code 3");
  Job killed = Job::start({"/bin/sh", "-c", "kill -9 $$"});
  EXPECT_EQ(killed.wait().describe(), "was killed by signal 9 (Killed)");
  EXPECT_TRUE(Job::start({"true"}).wait().success());
  EXPECT_EQ(ExitStatus{}.describe(), "ended with an unknown status");
}

TEST(JobTest, PollCachesAndStopIsIdempotent) {
  Job job = Job::start({"/bin/sh", "-c", "exit 5"});
  ASSERT_TRUE(job.wait_for(milliseconds(10000)));
  EXPECT_EQ(job.poll()->code, 5);
  EXPECT_EQ(job.poll()->code, 5);
  EXPECT_EQ(job.stop(milliseconds(100)).code, 5);  // ended on its own: nothing signalled
  EXPECT_EQ(job.stop(milliseconds(100)).code, 5);
  EXPECT_EQ(job.exit_fd(), -1);
}

TEST(JobTest, WaitForTimesOutWithoutSpinning) {
  Job job = Job::start({"sleep", "30"});
  const double cpu_before = cpu_seconds();
  const auto start = Clock::now();
  EXPECT_FALSE(job.wait_for(milliseconds(500)));
  const auto took = Clock::now() - start;
  EXPECT_GE(took, milliseconds(500));
  EXPECT_LT(took, milliseconds(3000));
  // A spinning wait would burn most of the 0.5 s.
  EXPECT_LT(cpu_seconds() - cpu_before, 0.05);
  const auto stop_start = Clock::now();
  EXPECT_EQ(job.stop(milliseconds(10000)).signal, SIGTERM);
  EXPECT_LT(Clock::now() - stop_start, milliseconds(5000));
}

TEST(JobTest, WaitForReturnsAsSoonAsTheJobEnds) {
  Job job = Job::start({"sleep", "0.2"});
  const auto start = Clock::now();
  const auto status = job.wait_for(milliseconds(10000));
  ASSERT_TRUE(status);
  EXPECT_TRUE(status->success());
  EXPECT_LT(Clock::now() - start, milliseconds(5000));
}

TEST(JobTest, DestructorStopsTheGroup) {
  TempDir dir;
  std::vector<pid_t> sleepers;
  pid_t leader = -1;
  {
    Job job = start_two_sleepers(dir / "pids");
    leader = job.pid();
    sleepers = read_pids(dir / "pids", 2);
    ASSERT_EQ(sleepers.size(), 2u);
  }
  EXPECT_TRUE(process_gone(leader));
  for (pid_t pid : sleepers) EXPECT_TRUE(process_gone(pid)) << pid;
}

TEST(JobTest, UnwindingFromAnExceptionStopsTheGroup) {
  TempDir dir;
  std::vector<pid_t> sleepers;
  try {
    Job job = start_two_sleepers(dir / "pids");
    sleepers = read_pids(dir / "pids", 2);
    throw std::runtime_error("the run failed");
  } catch (const std::runtime_error&) {
  }
  ASSERT_EQ(sleepers.size(), 2u);
  for (pid_t pid : sleepers) EXPECT_TRUE(process_gone(pid)) << pid;
}

TEST(JobTest, MoveAssignmentStopsTheJobItReplaces) {
  Job job = Job::start({"sleep", "30"});
  const pid_t first = job.pid();
  job = Job::start({"sleep", "30"});
  EXPECT_TRUE(process_gone(first));
  EXPECT_NE(job.pid(), first);
  job.stop(milliseconds(1000));
}

TEST(JobTest, TheJobDiesWithTheThreadThatStartedIt) {
  // A caller that dies without running any destructor (as under SIGKILL).
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t caller = ::fork();
  ASSERT_GE(caller, 0);
  if (caller == 0) {
    ::close(pipe_fds[0]);
    Job job = Job::start({"sleep", "30"});
    const pid_t pid = job.pid();
    ssize_t ignored = ::write(pipe_fds[1], &pid, sizeof pid);
    (void)ignored;
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  pid_t job_pid = -1;
  const ssize_t got = ::read(pipe_fds[0], &job_pid, sizeof job_pid);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(caller, &status, 0);
  ASSERT_EQ(got, static_cast<ssize_t>(sizeof job_pid));
  EXPECT_TRUE(process_gone(job_pid));
}

TEST(JobTest, AProgramThatCannotStartIsAToolErrorNamingIt) {
  try {
    Job::start({"/nonexistent/pypto-tool", "--version"});
    FAIL() << "expected ToolError";
  } catch (const ToolError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/pypto-tool"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
  }
  try {
    Job::start({"/nonexistent/bin/mpirun", "-n", "2", "true"});
    FAIL() << "expected ToolError";
  } catch (const ToolError& e) {
    EXPECT_NE(std::string(e.what()).find("openmpi-bin"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Job::start({"pypto-no-such-program-xyz"}), ToolError);
  EXPECT_THROW(Job::start({"/etc/hostname"}), ToolError);  // not executable: EACCES
}

TEST(JobTest, EnvironmentIsAddedAndStdinIsEmpty) {
  TempDir dir;
  const std::string out = (dir / "out").string();
  JobOptions options;
  options.extra_env = {"PYPTO_LAUNCH_TEST=hello there", "HOME=/launch-home"};
  Job job =
      Job::start({"/bin/sh", "-c", "echo \"$PYPTO_LAUNCH_TEST|$HOME|$(cat)\" > " + out}, options);
  ASSERT_TRUE(job.wait().success());
  EXPECT_EQ(read_file(dir / "out"), "hello there|/launch-home|\n");
}

TEST(JobTest, AnIgnoredSigchldDoesNotLoseTheStatus) {
  struct sigaction ignore {};
  struct sigaction saved {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  ::sigaction(SIGCHLD, &ignore, &saved);
  Job job = Job::start({"/bin/sh", "-c", "exit 4"});
  const ExitStatus status = job.wait();
  ::sigaction(SIGCHLD, &saved, nullptr);
  EXPECT_EQ(status.code, 4) << status.describe();
}

TEST(JobTest, TheCallersIgnoredSignalsAreNotInherited) {
  // An ignored SIGTERM would make the job unstoppable but for SIGKILL.
  struct sigaction ignore {};
  struct sigaction saved {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  ::sigaction(SIGTERM, &ignore, &saved);
  Job job = Job::start({"sleep", "30"});
  ::sigaction(SIGTERM, &saved, nullptr);
  EXPECT_EQ(job.stop(milliseconds(5000)).signal, SIGTERM);
}

}  // namespace
}  // namespace pypto::launch
