#include "coordinator/progress_line.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace pypto::coord {
namespace {

// Everything written to the pipe so far.
std::string drain(int fd) {
  std::string text;
  char buf[256];
  for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) text.append(buf, static_cast<size_t>(n));
  return text;
}

class ProgressLineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::pipe(fds_), 0);
    ASSERT_EQ(::fcntl(fds_[0], F_SETFL, O_NONBLOCK), 0);
  }
  void TearDown() override {
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  int fds_[2] = {-1, -1};
};

TEST_F(ProgressLineTest, DrawsInPlaceThrottledAndErasesItself) {
  {
    ProgressLine line("bench", fds_[1], true);
    line.update("round", 1, 3, 1.5);
    line.update("round", 2, 3, 1.25);  // within 100 ms of the first: not drawn
    line.update("round", 3, 3, 1.0);   // the last is always drawn
  }
  EXPECT_EQ(drain(fds_[0]),
            "\rbench: round 1/3, last 1.500 ms\033[K"
            "\rbench: round 3/3, last 1.000 ms\033[K"
            "\r\033[K");
}

TEST_F(ProgressLineTest, IsQuietWhenNotEnabled) {
  {
    ProgressLine line("bench", fds_[1], false);
    line.update("round", 3, 3, 1.0);
  }
  EXPECT_EQ(drain(fds_[0]), "");
}

TEST_F(ProgressLineTest, StderrOfATestIsNoTerminal) {
  // ctest captures stderr: the line the command would draw stays away.
  if (::isatty(STDERR_FILENO)) GTEST_SKIP() << "stderr is a terminal here";
  ProgressLine line = ProgressLine::on_stderr("bench");
  line.update("round", 1, 1);
  SUCCEED();
}

}  // namespace
}  // namespace pypto::coord
