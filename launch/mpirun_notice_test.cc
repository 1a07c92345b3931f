#include "launch/mpirun_notice.h"

#include <gtest/gtest.h>

namespace pypto::launch {
namespace {

void feed(MpirunNotices& notices, const std::string& text) {
  size_t start = 0;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
    notices.add_line(std::string_view(text).substr(start, nl - start));
}

// Open MPI 4.1's blocks, as mpiexec wrote them in a run where rank 0 was killed.
constexpr const char* kSignalled =
    "--------------------------------------------------------------------------\n"
    "Primary job  terminated normally, but 1 process returned\n"
    "a non-zero exit code. Per user-direction, the job has been aborted.\n"
    "--------------------------------------------------------------------------\n"
    "[vm:28986] PMIX ERROR: UNREACHABLE in file ptl_base_connection_hdlr.c at line 388\n"
    "--------------------------------------------------------------------------\n"
    "mpiexec noticed that process rank 0 with PID 0 on node vm exited on signal 9 (Killed).\n"
    "--------------------------------------------------------------------------\n";

constexpr const char* kExited =
    "--------------------------------------------------------------------------\n"
    "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
    "the job to be terminated. The first process to do so was:\n"
    "\n"
    "  Process name: [[54273,1],3]\n"
    "  Exit code:    7\n"
    "--------------------------------------------------------------------------\n";

TEST(MpirunNoticeTest, NamesTheRankAndSignalOfAKilledRank) {
  MpirunNotices notices;
  feed(notices, kSignalled);
  const auto ended = notices.first();
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->rank, 0);
  EXPECT_EQ(ended->signal, 9);
  EXPECT_EQ(ended->exit_code, -1);
  EXPECT_EQ(ended->notice,
            "mpiexec noticed that process rank 0 with PID 0 on node vm exited on signal 9 "
            "(Killed).");
}

TEST(MpirunNoticeTest, NamesTheRankAndCodeOfARankThatExited) {
  MpirunNotices notices;
  feed(notices, kExited);
  const auto ended = notices.first();
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->rank, 3);
  EXPECT_EQ(ended->signal, 0);
  EXPECT_EQ(ended->exit_code, 7);
}

TEST(MpirunNoticeTest, ReadsANoticeWrappedAtAnySpace) {
  MpirunNotices notices;
  feed(notices,
       "----------\nmpirun noticed that process rank 12 with PID 77 on node\n"
       "  a-very-long-host-name.example exited on signal 11\n(Segmentation fault).\n----------\n");
  const auto ended = notices.first();
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->rank, 12);
  EXPECT_EQ(ended->signal, 11);
}

TEST(MpirunNoticeTest, NamesARankThatExitedWithStatusZeroWithoutFinalize) {
  MpirunNotices notices;
  for (const char* line :
       {"--------------------------------------------------------------------------",
        "mpirun has exited due to process rank 1 with PID 0 on",
        "node vm exiting improperly. There are three reasons this could occur:", "",
        "1. this process did not call \"init\" before exiting, but others in"})
    notices.add_line(line);
  const auto first = notices.first();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->rank, 1);
  EXPECT_EQ(first->exit_code, 0);
  EXPECT_TRUE(first->improper);
  EXPECT_EQ(first->signal, 0);
}

TEST(MpirunNoticeTest, TellsTheBannersOfRanksThatExitedNonzeroFromANoticeOfAKill) {
  const std::string rule(74, '-');
  EXPECT_TRUE(is_nonzero_exit_banner(rule + "\nPrimary job  terminated normally, but 1 process returned\n"
                                     "a non-zero exit code. Per user-direction, the job has been aborted.\n" +
                                     rule + "\n"));
  EXPECT_TRUE(is_nonzero_exit_banner(rule + "\nmpiexec detected that one or more processes exited "
                                     "with non-zero status, thus causing\nthe job to be terminated.\n" +
                                     rule + "\n"));
  EXPECT_FALSE(is_nonzero_exit_banner(rule + "\nmpiexec noticed that process rank 1 with PID 0 on node "
                                      "vm exited on signal 9 (Killed).\n" + rule + "\n"));
}

TEST(MpirunNoticeTest, KeepsTheFirstAndIgnoresOrdinaryOutput) {
  MpirunNotices notices;
  feed(notices, "[12:00:00] [info] rank 0 noticed that process rank 5 ... is fine\n");
  EXPECT_FALSE(notices.first());
  feed(notices, kExited);
  feed(notices, kSignalled);
  ASSERT_TRUE(notices.first());
  EXPECT_EQ(notices.first()->rank, 3);
}

TEST(MpirunNoticeTest, AnAgentLogBetweenSeparatorsDoesNotGrowWithoutBound) {
  MpirunNotices notices;
  notices.add_line("----------");
  for (int i = 0; i < 10000; ++i) notices.add_line("[debug] a long line of an agent's log");
  notices.add_line("----------");
  feed(notices, kSignalled);
  ASSERT_TRUE(notices.first());
  EXPECT_EQ(notices.first()->signal, 9);
}

}  // namespace
}  // namespace pypto::launch
