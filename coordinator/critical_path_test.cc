#include "coordinator/critical_path.h"

#include <gtest/gtest.h>

namespace pypto::coord {
namespace {

std::vector<CriticalStep> critical_path_of(const RunTimeline& run) {
  return critical_path(run, run.comm_releases());
}

TimelineTask task(int64_t id, const char* kernel, int64_t start, int64_t end) {
  TimelineTask t;
  t.task_id = id;
  t.kernel = kernel;
  t.core_id = 0;
  t.start_ns = start;
  t.end_ns = end;
  return t;
}

TimelineCommOp comm(const char* kind, int64_t peer, int64_t task_id, int64_t start, int64_t end) {
  TimelineCommOp op;
  op.kind = kind;
  op.window = "signal";
  op.window_id = 1;
  op.cell = 0;
  op.peer = peer;
  op.value = 1;
  op.mode = std::string(kind) == "wait" ? "ge" : "add";
  op.task_id = task_id;
  op.core_id = 0;
  op.start_ns = start;
  op.end_ns = end;
  return op;
}

TimelineDispatch dispatch(int rank, int64_t begin, int64_t end) {
  TimelineDispatch d;
  d.rank = rank;
  d.program = "chip_orch";
  d.level = 1;
  d.begin_ns = begin;
  d.end_ns = end;
  return d;
}

// Rank 0 computes, then waits from 20 to 80 for rank 1, whose producer task
// notifies at 70; rank 0 finishes last, at 100.
RunTimeline waiting_run() {
  RunTimeline run;
  TimelineDispatch r0 = dispatch(0, 0, 100);
  r0.tasks = {task(0, "consumer", 10, 95)};
  r0.comm_ops = {comm("wait", -1, 0, 20, 80)};
  TimelineDispatch r1 = dispatch(1, 0, 75);
  r1.tasks = {task(0, "producer", 5, 72)};
  r1.comm_ops = {comm("notify", 0, 0, 70, 71)};
  run.dispatches = {r0, r1};
  return run;
}

TEST(CriticalPathTest, CrossesToTheRankWhoseNotifyReleasedTheWait) {
  const std::vector<CriticalStep> path = critical_path_of(waiting_run());
  ASSERT_EQ(path.size(), 5u);
  EXPECT_EQ(path[0].rank, 1);
  EXPECT_EQ(path[0].kind, CriticalStep::Kind::kIdle);  // rank 1's dispatch before its task
  EXPECT_EQ(path[0].ns(), 5);
  EXPECT_EQ(path[1].what, "producer (task 0)");
  EXPECT_EQ(path[1].start_ns, 5);
  EXPECT_EQ(path[1].end_ns, 70);
  EXPECT_EQ(path[2].kind, CriticalStep::Kind::kWaitRelease);
  EXPECT_EQ(path[2].what, "wait 'signal'[0] ge 1 released by rank 1's notify");
  EXPECT_EQ(path[2].start_ns, 70);
  EXPECT_EQ(path[2].end_ns, 80);
  EXPECT_EQ(path[3].rank, 0);
  EXPECT_EQ(path[3].what, "consumer (task 0)");
  EXPECT_EQ(path[3].ns(), 15);  // 80 .. 95
  EXPECT_EQ(path[4].kind, CriticalStep::Kind::kIdle);  // 95 .. 100: the dispatch's end
  int64_t sum = 0;
  for (const CriticalStep& s : path) sum += s.ns();
  EXPECT_EQ(sum, 100);  // the steps tile the wall time
}

TEST(CriticalPathTest, AWaitThatDidNotBlockIsNotACrossing) {
  RunTimeline run = waiting_run();
  run.dispatches[1].comm_ops[0].start_ns = 15;  // notified before the wait began
  const std::vector<CriticalStep> path = critical_path_of(run);
  for (const CriticalStep& s : path) EXPECT_EQ(s.rank, 0) << s.what;
}

TEST(CriticalPathTest, FollowsTheRanksEarlierDispatchAcrossTheGap) {
  RunTimeline run;
  TimelineDispatch d0 = dispatch(0, 0, 40);
  d0.tasks = {task(0, "first", 0, 40)};
  TimelineDispatch d1 = dispatch(0, 50, 90);
  d1.index = 1;
  d1.tasks = {task(0, "second", 50, 90)};
  run.dispatches = {d0, d1};
  const std::vector<CriticalStep> path = critical_path_of(run);
  ASSERT_EQ(path.size(), 3u);
  EXPECT_EQ(path[0].what, "first (task 0)");
  EXPECT_EQ(path[1].kind, CriticalStep::Kind::kBetweenDispatches);
  EXPECT_EQ(path[1].ns(), 10);
  EXPECT_EQ(path[2].what, "second (task 0)");
}

TEST(CriticalPathTest, NoRecordsNoPath) { EXPECT_TRUE(critical_path_of(RunTimeline{}).empty()); }

}  // namespace
}  // namespace pypto::coord
