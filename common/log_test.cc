#include "common/log.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "pypto/error.h"

namespace pypto::log {
namespace {

class LogLevelTest : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv("PYPTO_RUNTIME_LOG");
    set_level(Level::kInfo);
  }
};

TEST_F(LogLevelTest, ParsesEveryPyptoLevelName) {
  for (const char* name : {"debug", "info", "timing", "warn", "error", "null"}) {
    auto level = parse_level(name);
    ASSERT_TRUE(level.has_value()) << name;
    EXPECT_STREQ(level_name(*level), name);
  }
  EXPECT_FALSE(parse_level("verbose").has_value());
}

TEST_F(LogLevelTest, TimingShowsTimingAndWarningsButNotInfo) {
  set_level(Level::kTiming);
  EXPECT_FALSE(enabled(Level::kInfo));
  EXPECT_TRUE(enabled(Level::kTiming));
  EXPECT_TRUE(enabled(Level::kWarn));
}

TEST_F(LogLevelTest, NullSilencesEverything) {
  set_level(Level::kNull);
  EXPECT_FALSE(enabled(Level::kError));
}

TEST_F(LogLevelTest, CommandLineWinsOverEnvironment) {
  setenv("PYPTO_RUNTIME_LOG", "error", 1);
  init(std::string("debug"));
  EXPECT_EQ(level(), Level::kDebug);
  init(std::nullopt);
  EXPECT_EQ(level(), Level::kError);
}

TEST_F(LogLevelTest, UnknownLevelIsAUsageErrorListingValidNames) {
  try {
    init(std::string("loud"));
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'loud'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("debug, info, timing, warn, error, null"),
              std::string::npos);
  }
  setenv("PYPTO_RUNTIME_LOG", "chatty", 1);
  EXPECT_THROW(init(std::nullopt), UsageError);
}

}  // namespace
}  // namespace pypto::log
