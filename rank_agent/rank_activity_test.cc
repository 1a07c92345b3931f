#include "rank_agent/rank_activity.h"

#include <gtest/gtest.h>

#include "orchestration/dispatch_record.h"
#include "pypto/kernel_abi.h"

namespace pypto::rank {
namespace {

using std::chrono::milliseconds;
constexpr int64_t kMs = 1'000'000;

TEST(RankActivityTest, ADispatchIsOverdueOnlyWhileRunningAndPastItsDeadlineAndGrace) {
  RankActivity activity;
  EXPECT_FALSE(activity.deadline_ns());
  EXPECT_FALSE(activity.overdue(chip::now_ns(), milliseconds(0)));

  const int64_t before = chip::now_ns();
  activity.dispatch_started(3, "slow", nullptr, milliseconds(100));
  const int64_t after = chip::now_ns();
  ASSERT_TRUE(activity.deadline_ns());
  EXPECT_GE(*activity.deadline_ns(), before + 100 * kMs);
  EXPECT_LE(*activity.deadline_ns(), after + 100 * kMs);

  EXPECT_FALSE(activity.overdue(before + 50 * kMs, milliseconds(1000)));
  EXPECT_FALSE(activity.overdue(before + 1050 * kMs, milliseconds(1000)));  // in the grace
  auto message = activity.overdue(after + 1100 * kMs, milliseconds(1000));
  ASSERT_TRUE(message);
  EXPECT_EQ(*message,
            "dispatch d3 (program 'slow') still running 1 s after the dispatch deadline of 0.1 s: "
            "no task is in a kernel (an orchestration that never returns?); this process must be "
            "restarted");

  activity.dispatch_ended(false, "failed");
  EXPECT_FALSE(activity.deadline_ns());
  EXPECT_FALSE(activity.overdue(after + 5000 * kMs, milliseconds(1000)));
}

TEST(RankActivityTest, AnOverdueDispatchNamesTheTasksStillInAKernel) {
  RankActivity activity;
  activity.dispatch_started(0, "hang", nullptr, milliseconds(500));
  activity.board().begin_dispatch({"spin"});
  activity.board().task_started(1, PYPTO_CORE_AIV, 0, 0, chip::now_ns());
  auto message = activity.overdue(chip::now_ns() + 2000 * kMs, milliseconds(1000));
  ASSERT_TRUE(message);
  EXPECT_EQ(*message,
            "dispatch d0 (program 'hang') still running 1 s after the dispatch deadline of 0.5 s: "
            "1 task(s) still running (a kernel that never returns?): task 0 'spin' on aiv core 1; "
            "this process must be restarted");
  activity.board().task_ended(1);
  message = activity.overdue(chip::now_ns() + 2000 * kMs, milliseconds(1000));
  ASSERT_TRUE(message);
  EXPECT_NE(message->find("no task is in a kernel"), std::string::npos) << *message;
}

}  // namespace
}  // namespace pypto::rank
