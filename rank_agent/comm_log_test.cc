#include "rank_agent/comm_log.h"

#include <gtest/gtest.h>

#include <atomic>
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

// An operation is visible from its start (a wait still blocked shows, with the
// value it last read), and finish() completes it in place.
TEST(CommLogTest, AnOperationInProgressIsVisibleUntilItFinishes) {
  CommLog log(8);
  CommOp wait;
  wait.kind = CommOpKind::kWait;
  wait.start_ns = 5;
  const uint64_t ticket = log.begin(wait);
  log.observe(ticket, 3);
  std::vector<CommOp> ops = log.recent();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].end_ns, 0);
  EXPECT_EQ(ops[0].observed, 3);
  log.finish(ticket, 9, false);
  ops = log.recent();
  EXPECT_EQ(ops[0].end_ns, 9);
  EXPECT_FALSE(ops[0].ok);
  log.clear();
  EXPECT_TRUE(log.recent().empty());
  log.finish(ticket, 10, true);  // a ticket of before the clear: nothing to see
  EXPECT_TRUE(log.recent().empty());
}

// A reader on another thread while the cores record: whole operations only.
TEST(CommLogTest, AReaderSeesWholeOperationsWhileOthersRecord) {
  CommLog log(64);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int64_t i = 1; !stop.load(); ++i) {
      CommOp op = op_at(i);
      op.bytes = static_cast<uint64_t>(i) * 3;
      log.finish(log.begin(op), i + 1, true);
    }
  });
  for (int round = 0; round < 2000; ++round)
    for (const CommOp& op : log.recent(16)) ASSERT_EQ(op.bytes, static_cast<uint64_t>(op.start_ns) * 3);
  stop = true;
  writer.join();
}

TEST(CommLogTest, KindsHaveTheNamesOfTheCommCalls) {
  EXPECT_STREQ(comm_op_kind_name(CommOpKind::kRemoteLoad), "remote_load");
  EXPECT_STREQ(comm_op_kind_name(CommOpKind::kRemoteAdd), "remote_add");
  EXPECT_STREQ(comm_op_kind_name(CommOpKind::kWait), "wait");
}

}  // namespace
}  // namespace pypto::rank
