#include "rank_agent/comm_log.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace pypto::rank {
namespace {

CommOp op_at(int64_t start) {
  CommOp op;
  op.kind = CommOpKind::kNotify;
  op.start_ns = start;
  op.end_ns = start + 1;
  return op;
}

TEST(CommLogTest, KeepsTheMostRecentOperationsOldestFirst) {
  CommLog log(3);
  for (int64_t i = 0; i < 5; ++i) log.record(op_at(i));
  EXPECT_EQ(log.recorded(), 5u);
  const std::vector<CommOp> ops = log.recent();
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].start_ns, 2);
  EXPECT_EQ(ops[2].start_ns, 4);
  log.clear();
  EXPECT_TRUE(log.recent().empty());
}

TEST(CommLogTest, ThreadsRecordConcurrentlyWithoutLosingACount) {
  CommLog log(4096);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&log, t] {
      for (int i = 0; i < 500; ++i) log.record(op_at(t * 1000 + i));
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(log.recorded(), 2000u);
  EXPECT_EQ(log.recent().size(), 2000u);
}

TEST(CommLogTest, KindsHaveTheNamesOfTheCommCalls) {
  EXPECT_STREQ(comm_op_kind_name(CommOpKind::kRemoteLoad), "remote_load");
  EXPECT_STREQ(comm_op_kind_name(CommOpKind::kRemoteAdd), "remote_add");
  EXPECT_STREQ(comm_op_kind_name(CommOpKind::kWait), "wait");
}

}  // namespace
}  // namespace pypto::rank
