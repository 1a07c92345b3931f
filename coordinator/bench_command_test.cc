#include "coordinator/bench_command.h"

#include <gtest/gtest.h>

#include <cmath>

#include "pypto/error.h"

namespace pypto::coord {
namespace {

TEST(RoundStatsTest, SummarizesUnsortedRounds) {
  const RoundStats s = round_stats({5, 1, 4, 2, 3, 10, 6, 7, 9, 8});
  EXPECT_EQ(s.rounds, 10);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_DOUBLE_EQ(s.median, 5.5);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_DOUBLE_EQ(s.p90, 9);
}

TEST(RoundStatsTest, OneRoundIsEveryStatistic) {
  const RoundStats s = round_stats({2.5});
  EXPECT_DOUBLE_EQ(s.min, 2.5);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.p90, 2.5);
  EXPECT_DOUBLE_EQ(s.max, 2.5);
}

TEST(RoundStatsTest, NoRoundsIsAUsageError) { EXPECT_THROW(round_stats({}), UsageError); }

TEST(RoundStatsTest, StdevIsTheSampleStandardDeviation) {
  EXPECT_DOUBLE_EQ(round_stats({2, 4, 4, 4, 5, 5, 7, 9}).stdev, std::sqrt(32.0 / 7.0));
  EXPECT_DOUBLE_EQ(round_stats({3}).stdev, 0);
}

TEST(BenchBreakdownTest, NamesTheSlowestRankOfEachRoundAndItsShare) {
  // Two ranks; rank 1 runs two dispatches. Round 1: rank 1 slowest (3 of 4 ms);
  // round 2: rank 0 slowest (5 of 10 ms); round 3: rank 1 (4 of 5 ms).
  const std::vector<RoundRecord> rounds = {
      {4, {{0, 0, "a", 1}, {1, 0, "b", 1}, {1, 1, "c", 2}}},
      {10, {{0, 0, "a", 5}, {1, 0, "b", 1}, {1, 1, "c", 1}}},
      {5, {{0, 0, "a", 1}, {1, 0, "b", 2}, {1, 1, "c", 2}}},
  };
  const BenchBreakdown b = bench_breakdown(rounds);
  ASSERT_EQ(b.ranks.size(), 2u);
  EXPECT_EQ(b.ranks[0].rank, 0);
  EXPECT_EQ(b.ranks[0].slowest_rounds, 1);
  EXPECT_EQ(b.ranks[1].slowest_rounds, 2);
  EXPECT_DOUBLE_EQ(b.ranks[1].ms.median, 3);  // 3, 2, 4
  EXPECT_DOUBLE_EQ(b.ranks[0].ms.max, 5);
  ASSERT_EQ(b.dispatches.size(), 3u);
  EXPECT_EQ(b.dispatches[2].rank, 1);
  EXPECT_EQ(b.dispatches[2].index, 1u);
  EXPECT_EQ(b.dispatches[2].program, "c");
  EXPECT_DOUBLE_EQ(b.dispatches[2].ms.mean, 5.0 / 3);
  EXPECT_DOUBLE_EQ(b.slowest_share_median, 0.75);  // shares 0.75, 0.5, 0.8
}

TEST(BenchBreakdownTest, NoRoundsIsAUsageError) { EXPECT_THROW(bench_breakdown({}), UsageError); }

}  // namespace
}  // namespace pypto::coord
