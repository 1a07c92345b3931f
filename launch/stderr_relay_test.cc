#include "launch/stderr_relay.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <mutex>
#include <vector>

#include "launch/job.h"
#include "launch/launch_test_util.h"

namespace pypto::launch {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct Lines {
  std::mutex mutex;
  std::vector<std::string> lines;
  StderrRelay::LineHandler handler() {
    return [this](std::string_view line) {
      std::lock_guard lock(mutex);
      lines.emplace_back(line);
    };
  }
};

std::string read_all(int fd) {
  std::string text;
  char buffer[4096];
  ::lseek(fd, 0, SEEK_SET);
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) text.append(buffer, n);
  return text;
}

TEST(StderrRelayTest, CopiesEveryByteAndHandsOverEveryLine) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  testing::TempDir dir;
  const int out = ::open((dir.path() / "copy").c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(out, 0);
  Lines seen;
  StderrRelay relay(pipe_fds[0], out, seen.handler());
  const std::string text = "first line\nsecond ";
  ASSERT_EQ(::write(pipe_fds[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ASSERT_EQ(::write(pipe_fds[1], "half\nno newline", 15), 15);
  ::close(pipe_fds[1]);
  EXPECT_TRUE(relay.finish(Clock::now() + milliseconds(5000)));
  EXPECT_EQ(read_all(out), "first line\nsecond half\nno newline");
  EXPECT_EQ(seen.lines, (std::vector<std::string>{"first line", "second half", "no newline"}));
  ::close(out);
}

// A framed block the filter refuses is not copied; every other byte is, in order,
// and every line, dropped or not, still reaches the line handler.
TEST(StderrRelayTest, AFramedBlockTheFilterRefusesIsNotCopied) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  testing::TempDir dir;
  const int out = ::open((dir.path() / "copy").c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(out, 0);
  Lines seen;
  const std::string rule(30, '-');
  StderrRelay relay(pipe_fds[0], out, seen.handler(), [](std::string_view block) {
    return block.find("drop me") != std::string_view::npos;
  });
  const std::string kept = rule + "\nkeep me\n" + rule + "\n";
  const std::string text = "before\n" + rule + "\ndrop me\n" + rule + "\n" + kept + "- not a rule\n";
  // Written in pieces that split lines and rules.
  for (size_t at = 0; at < text.size(); at += 7) {
    const std::string piece = text.substr(at, 7);
    ASSERT_EQ(::write(pipe_fds[1], piece.data(), piece.size()), static_cast<ssize_t>(piece.size()));
  }
  ASSERT_EQ(::write(pipe_fds[1], "tail", 4), 4);
  ::close(pipe_fds[1]);
  EXPECT_TRUE(relay.finish(Clock::now() + milliseconds(5000)));
  EXPECT_EQ(read_all(out), "before\n" + kept + "- not a rule\ntail");
  EXPECT_EQ(seen.lines.size(), 9u);  // tail included
  ::close(out);
}

TEST(StderrRelayTest, AWriterThatNeverClosesCannotHoldTheCaller) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  Lines seen;
  StderrRelay relay(pipe_fds[0], -1, seen.handler());
  ASSERT_EQ(::write(pipe_fds[1], "a line\n", 7), 7);
  const auto start = Clock::now();
  EXPECT_FALSE(relay.finish(Clock::now() + milliseconds(200)));
  EXPECT_LT(Clock::now() - start, milliseconds(2000));
  EXPECT_EQ(seen.lines, std::vector<std::string>{"a line"});
  ::close(pipe_fds[1]);
}

TEST(StderrRelayTest, AJobsStderrIsHandledBeforeItsExitIsReported) {
  Lines seen;
  JobOptions options;
  options.on_stderr_line = seen.handler();
  Job job = Job::start({"/bin/sh", "-c", "echo to-stderr >&2; echo to-stdout; exit 3"}, options);
  const ExitStatus status = job.wait();
  EXPECT_EQ(status.code, 3);
  std::lock_guard lock(seen.mutex);
  EXPECT_EQ(seen.lines, std::vector<std::string>{"to-stderr"});
}

}  // namespace
}  // namespace pypto::launch
