#include "coordinator/bench_command.h"

#include <gtest/gtest.h>

#include "common/error.h"

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

}  // namespace
}  // namespace pypto::coord
