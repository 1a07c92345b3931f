#include "common/rank_list.h"

#include <gtest/gtest.h>

namespace pypto {
namespace {

TEST(RankList, RunsCollapse) {
  EXPECT_EQ(rank_list({}), "");
  EXPECT_EQ(rank_list({4}), "4");
  EXPECT_EQ(rank_list({0, 1, 2, 3, 5}), "0-3, 5");
  EXPECT_EQ(rank_list({1, 3, 4, 7}), "1, 3-4, 7");
}

}  // namespace
}  // namespace pypto
