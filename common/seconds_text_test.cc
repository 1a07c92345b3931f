#include "common/seconds_text.h"

#include <gtest/gtest.h>

namespace pypto {
namespace {

using std::chrono::milliseconds;

TEST(SecondsTextTest, PrintsTheShortestExactDecimal) {
  EXPECT_EQ(seconds_text(300.0), "300");
  EXPECT_EQ(seconds_text(0.1), "0.1");
  EXPECT_EQ(seconds_text(2.5), "2.5");
  EXPECT_EQ(seconds_text(1e-3), "0.001");
}

TEST(SecondsTextTest, MillisecondsReadAsSecondsWithoutRoundingNoise) {
  EXPECT_EQ(seconds_text(milliseconds(300000)), "300");
  EXPECT_EQ(seconds_text(milliseconds(2900)), "2.9");
  EXPECT_EQ(seconds_text(milliseconds(50)), "0.05");
  EXPECT_EQ(seconds_text(milliseconds(604800123)), "604800.123");
  EXPECT_EQ(seconds_text(milliseconds(1)), "0.001");
}

}  // namespace
}  // namespace pypto
