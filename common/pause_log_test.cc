#include "common/pause_log.h"

#include <gtest/gtest.h>

namespace pypto {
namespace {

using std::chrono::seconds;
using Clock = PauseLog::Clock;

const Clock::time_point t0 = Clock::time_point{} + seconds(1000);

TEST(PauseLogTest, TurnsWithinTheLongestSleepAreNoPause) {
  PauseLog log(seconds(2));
  EXPECT_EQ(log.tick(t0), Clock::duration{});
  EXPECT_EQ(log.tick(t0 + seconds(1)), Clock::duration{});
  EXPECT_EQ(log.tick(t0 + seconds(3)), Clock::duration{});
  EXPECT_EQ(log.silence(t0, t0 + seconds(3)), seconds(3));
}

TEST(PauseLogTest, AFreezeIsNotCountedAgainstAPeer) {
  PauseLog log(seconds(2));
  log.tick(t0);
  // Frozen from t0 + 2 s (the loop would have woken by then) to t0 + 11 s.
  EXPECT_EQ(log.tick(t0 + seconds(11)), seconds(9));
  // A peer last heard just before the freeze was silent 2 s that count, not 11.
  EXPECT_EQ(log.silence(t0, t0 + seconds(11)), seconds(2));
  // Heard in the middle of the freeze (its message read at the end): the part after counts not.
  EXPECT_EQ(log.silence(t0 + seconds(5), t0 + seconds(11)), seconds(0));
  // Heard after it: all of its silence counts.
  EXPECT_EQ(log.silence(t0 + seconds(11), t0 + seconds(20)), seconds(9));
}

TEST(PauseLogTest, APeerSilentAcrossSeveralFreezesIsBlamedForTheRest) {
  PauseLog log(seconds(1));
  log.tick(t0);
  log.tick(t0 + seconds(6));   // paused 5 s
  log.tick(t0 + seconds(7));
  log.tick(t0 + seconds(12));  // paused 4 s
  EXPECT_EQ(log.paused_since(t0), seconds(9));
  EXPECT_EQ(log.silence(t0, t0 + seconds(20)), seconds(11));
}

}  // namespace
}  // namespace pypto
