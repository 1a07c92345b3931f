#include "coordinator/stall_diagnosis.h"

#include <gtest/gtest.h>

namespace pypto::coord {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

std::vector<WindowInfo> flag_window(int world) {
  WindowInfo signal;
  signal.name = "signal";
  signal.dtype = DType::kI32;
  signal.shape = {world, 1};
  WindowInfo data;
  data.name = "data";
  data.shape = {256};
  return {signal, data};
}

wire::WireCommOp op(std::string kind, std::string window, int64_t cell, int32_t peer,
                    int64_t start, int64_t end, bool ok = true) {
  wire::WireCommOp o;
  o.kind = std::move(kind);
  o.window = std::move(window);
  o.cell = cell;
  o.peer = peer;
  o.value = 1;
  o.mode = o.kind == "wait" ? "ge" : "add";
  o.task_id = 0;
  o.core_id = 1;
  o.start_ns = start;
  o.end_ns = end;
  o.ok = ok;
  return o;
}

wire::RankState in_dispatch(bool running) {
  wire::RankState s;
  s.dispatch = 0;
  s.program = "chip_orch";
  s.running = running;
  s.start_ns = 0;
  s.now_ns = 3 * kSecond;
  return s;
}

// A rank that waits, still blocked, on 'signal'[row, 0].
RankStateReport waiting_on(int row) {
  wire::RankState s = in_dispatch(true);
  s.comm_ops = {op("wait", "signal", row, -1, kSecond, 0)};
  return {s, false};
}

RankStateReport finished(std::vector<wire::WireCommOp> ops = {}) {
  wire::RankState s = in_dispatch(false);
  s.end_ns = 2 * kSecond;
  s.comm_ops = std::move(ops);
  s.comm_ops_recorded = s.comm_ops.size();
  return {s, false};
}

TEST(StallDiagnosisTest, ARankThatFinishedWithoutNotifyingIsTheCulprit) {
  // Rank 2 skipped its notifies; ranks 0, 1 and 3 wait for row 2.
  const std::vector<RankStateReport> ranks = {waiting_on(2), waiting_on(2), finished(),
                                              waiting_on(2)};
  const auto d = diagnose_stall(ranks, flag_window(4));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->culprits, std::vector<int>{2});
  EXPECT_EQ(d->summary,
            "dispatch d0 of program 'chip_orch' stalled: rank 2 is the likely culprit: it "
            "finished dispatch d0 (program 'chip_orch') without notifying 'signal'[2, 0] on ranks "
            "0-1, 3");
  ASSERT_EQ(d->details.size(), 4u);
  EXPECT_EQ(d->details[0],
            "rank 0: waits on 'signal'[2, 0] ge 1 (now 0) for rank 2, for 2.0 s so far");
  EXPECT_EQ(d->details[2], "rank 2: finished dispatch d0 (program 'chip_orch')");
  EXPECT_EQ(d->json["culprits"], Json::array({2}));
  EXPECT_EQ(d->json["ranks"][0]["state"], "waiting");
  EXPECT_EQ(d->json["ranks"][0]["waits_for"], Json::array({2}));
  EXPECT_EQ(d->json["ranks"][0]["wait"]["index"], Json::array({2, 0}));
  EXPECT_EQ(d->json["ranks"][2]["state"], "finished");
  EXPECT_EQ(d->text().substr(0, d->summary.size() + 3), d->summary + "\n  ");
}

TEST(StallDiagnosisTest, ARankStillInAKernelIsTheCulpritNotTheFirstWaiterWhoseDeadlinePassed) {
  wire::RankState slow = in_dispatch(true);
  slow.tasks = {{1, "aiv", 0, 0, "spin", 0}};
  wire::RankState expired = in_dispatch(false);
  expired.ok = false;
  expired.error = "rank 0: program 'chip_orch': kernel 'step' (func_id 0) failed in task 0 on aiv "
                  "core 1: rank 0: wait on window 'signal' cell 1 (byte 4): expected value ge 1, "
                  "last seen 0 after 2.0 s (--wait-timeout); a peer never notified it (at p.ptl:5)";
  expired.comm_ops = {op("wait", "signal", 1, -1, kSecond, 3 * kSecond, false)};
  const auto d = diagnose_stall({{expired, false}, {slow, false}}, flag_window(2));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->culprits, std::vector<int>{1});
  EXPECT_EQ(d->summary,
            "dispatch d0 of program 'chip_orch' stalled: rank 1 is the likely culprit: it is "
            "still in kernel 'spin' (task 0 on aiv core 1) for 3.0 s");
  EXPECT_EQ(d->details[0],
            "rank 0: waited on 'signal'[1, 0] ge 1 (now 0) for rank 1 until its deadline, 2.0 s: "
            "program 'chip_orch': kernel 'step' (func_id 0) failed in task 0 on aiv core 1: rank "
            "0: wait on window 'signal' cell 1 (byte 4): expected value ge 1, last seen 0 after "
            "2.0 s (--wait-timeout); a peer never notified it (at p.ptl:5)");
  EXPECT_EQ(d->details[1],
            "rank 1: in dispatch d0 (program 'chip_orch'), in kernel 'spin' (task 0 on aiv core "
            "1) for 3.0 s");
  EXPECT_EQ(d->json["ranks"][1]["tasks"][0]["kernel"], "spin");
  EXPECT_EQ(d->json["ranks"][0]["wait"]["expired"], true);
}

TEST(StallDiagnosisTest, AChainOfWaitsEndsAtTheRankThatWaitsForNobody) {
  // 0 waits for 1, 1 waits for 2, and 2 finished without notifying anyone.
  const auto d = diagnose_stall({waiting_on(1), waiting_on(2), finished()}, flag_window(3));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->culprits, std::vector<int>{2});
  EXPECT_NE(d->summary.find("without notifying 'signal'[2, 0] on rank 1"), std::string::npos)
      << d->summary;
}

TEST(StallDiagnosisTest, RanksWaitingForEachOtherAreADeadlock) {
  const auto d = diagnose_stall({waiting_on(1), waiting_on(0)}, flag_window(2));
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->culprits.empty());
  EXPECT_EQ(d->summary,
            "dispatch d0 of program 'chip_orch' stalled: rank(s) 0-1 wait for each other (a "
            "deadlock)");
  EXPECT_EQ(d->json["deadlocked"], Json::array({0, 1}));
}

TEST(StallDiagnosisTest, ANotifyThatCameButDidNotSatisfyTheWaitIsSaid) {
  const auto d = diagnose_stall(
      {waiting_on(1), finished({op("notify", "signal", 1, 0, kSecond / 2, kSecond / 2 + 10)})},
      flag_window(2));
  ASSERT_TRUE(d);
  EXPECT_NE(d->summary.find("its notify of 'signal'[1, 0] did not satisfy rank(s) 0"),
            std::string::npos)
      << d->summary;
  EXPECT_NE(d->details[0].find("for rank 1 (which notified it: add 1)"), std::string::npos)
      << d->details[0];
}

TEST(StallDiagnosisTest, AWaitOnItsOwnRowBlamesTheWaiterAndAGoneRankIsSaidToBeGone) {
  auto d = diagnose_stall({finished(), waiting_on(1)}, flag_window(2));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->culprits, std::vector<int>{1});
  EXPECT_NE(d->summary.find("rank 1 is the likely culprit: it waits on 'signal'[1, 0] ge 1"),
            std::string::npos)
      << d->summary;
  EXPECT_NE(d->details[1].find("for itself"), std::string::npos) << d->details[1];

  d = diagnose_stall({waiting_on(1), {std::nullopt, true}}, flag_window(2));
  ASSERT_TRUE(d);
  EXPECT_NE(d->summary.find("rank 1 is the likely culprit: its process has ended"),
            std::string::npos)
      << d->summary;
  EXPECT_EQ(d->details[1], "rank 1: no answer (its process has ended)");
}

TEST(StallDiagnosisTest, AWindowWithoutARowPerRankNamesNoPeer) {
  wire::RankState s = in_dispatch(true);
  s.comm_ops = {op("wait", "data", 7, -1, kSecond, 0)};
  const auto d = diagnose_stall({{s, false}, finished()}, flag_window(2));
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->culprits.empty());
  EXPECT_EQ(d->summary,
            "dispatch d0 of program 'chip_orch' stalled: no rank is known to notify what rank 0 "
            "waits for");
  EXPECT_EQ(d->details[0], "rank 0: waits on 'data'[7] ge 1 (now 0), for 2.0 s so far");
}

TEST(StallDiagnosisTest, NothingToExplainWithoutAWait) {
  wire::RankState failed = in_dispatch(false);
  failed.ok = false;
  failed.error = "rank 0: kernel 'k' failed";
  EXPECT_FALSE(diagnose_stall({{failed, false}, finished()}, flag_window(2)));
  EXPECT_FALSE(diagnose_stall({{std::nullopt, false}, {std::nullopt, false}}, flag_window(2)));
}

}  // namespace
}  // namespace pypto::coord
