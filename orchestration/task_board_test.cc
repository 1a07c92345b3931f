#include "orchestration/task_board.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace pypto::chip {
namespace {

TEST(TaskBoardTest, ShowsTheTasksInAKernelWithTheirKernelNames) {
  TaskBoard board;
  board.begin_dispatch({"load_rows", "reduce_step"});
  EXPECT_TRUE(board.running().empty());
  board.task_started(3, 1, 12, 1, 1000);
  board.task_started(0, 0, 7, 0, 2000);
  std::vector<RunningTask> tasks = board.running();
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks[0].core_id, 0);
  EXPECT_EQ(tasks[0].kernel, "load_rows");
  EXPECT_EQ(tasks[1].core_id, 3);
  EXPECT_EQ(tasks[1].task_id, 12);
  EXPECT_EQ(tasks[1].kernel, "reduce_step");
  EXPECT_EQ(tasks[1].start_ns, 1000);
  board.task_ended(3);
  tasks = board.running();
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].task_id, 7);
  board.task_started(5, 1, 8, 9, 0);  // a func id without a name
  EXPECT_EQ(board.running()[1].kernel, "");
  board.task_started(TaskBoard::kMaxCores, 1, 1, 0, 0);  // ignored, not out of bounds
  EXPECT_EQ(board.running().size(), 2u);
}

// A reader sees whole entries while a core rewrites its slot: the task id and
// the start time posted together always come out together.
TEST(TaskBoardTest, AReaderNeverSeesHalfAnEntry) {
  TaskBoard board;
  board.begin_dispatch({"k"});
  std::atomic<bool> stop{false};
  std::thread core([&] {
    for (int64_t task = 0; !stop.load(); ++task) {
      board.task_started(0, 1, task, 0, task * 10);
      board.task_ended(0);
    }
  });
  int torn = 0;
  for (int i = 0; i < 20000; ++i)
    for (const RunningTask& t : board.running()) torn += t.start_ns != t.task_id * 10;
  stop = true;
  core.join();
  EXPECT_EQ(torn, 0);
}

}  // namespace
}  // namespace pypto::chip
