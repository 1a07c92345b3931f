#include "common/subprocess.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "pypto/error.h"

namespace pypto {
namespace {

TEST(SubprocessTest, CapturesStdoutAndStderrTogetherWithTheExitCode) {
  auto result = run_subprocess({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.term_signal, 0);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.output, "out\nerr\n");
  EXPECT_EQ(result.describe(), "exited with code 3");
}

TEST(SubprocessTest, MissingProgramIsAToolErrorNamingIt) {
  try {
    run_subprocess({"pypto-no-such-program-xyz", "--version"});
    FAIL() << "expected ToolError";
  } catch (const ToolError& e) {
    EXPECT_NE(std::string(e.what()).find("pypto-no-such-program-xyz"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
  }
}

TEST(SubprocessTest, TimeoutKillsTheWholeProcessGroup) {
  SubprocessOptions options;
  options.timeout = std::chrono::milliseconds(300);
  const auto start = std::chrono::steady_clock::now();
  // The background sleep keeps the pipe open: only killing the group ends it.
  auto result = run_subprocess({"sh", "-c", "echo started; sleep 30 & sleep 30"}, options);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(result.timed_out);
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.output, "started\n");
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_NE(result.describe().find("timed out"), std::string::npos);
}

TEST(SubprocessTest, ChildSeesOnlyStdioExtraEnvAndCwd) {
  // A descriptor the parent opened without O_CLOEXEC must not leak.
  int leaked = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(leaked, 0);
  SubprocessOptions options;
  options.extra_env = {"PYPTO_SUBPROCESS_TEST=hello"};
  options.cwd = "/";
  auto result = run_subprocess({"sh", "-c",
                                "echo $PYPTO_SUBPROCESS_TEST; pwd; test -e /proc/self/fd/" +
                                    std::to_string(leaked) + " && echo leaked || echo closed"},
                               options);
  ::close(leaked);
  EXPECT_TRUE(result.ok()) << result.output;
  EXPECT_EQ(result.output, "hello\n/\nclosed\n");
}

TEST(SubprocessTest, FormatsCommandsForAShell) {
  EXPECT_EQ(format_command({"c++", "-O2", "a b.cpp", "it's"}), "c++ -O2 'a b.cpp' 'it'\\''s'");
  EXPECT_TRUE(find_program_in_path("sh").has_value());
  EXPECT_FALSE(find_program_in_path("pypto-no-such-program-xyz").has_value());
}

// A stop request as a signal handler makes one: a pipe with a byte in it.
class StopRequest {
 public:
  explicit StopRequest(int signo) {
    EXPECT_EQ(::pipe(fds_), 0);
    g_signo = signo;
    set_subprocess_stop(fds_[0], [] { return g_signo; });
  }
  void fire() { EXPECT_EQ(::write(fds_[1], "x", 1), 1); }
  ~StopRequest() {
    clear_subprocess_stop(fds_[0]);
    ::close(fds_[0]);
    ::close(fds_[1]);
  }

 private:
  static inline int g_signo = 0;
  int fds_[2] = {-1, -1};
};

TEST(SubprocessTest, AStopRequestKillsTheGroupAtOnceAndThrowsInterruptedError) {
  StopRequest stop(SIGTERM);
  std::thread firer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop.fire();
  });
  const auto start = std::chrono::steady_clock::now();
  try {
    // The background sleep holds the pipe: only killing the group ends the run.
    run_subprocess({"sh", "-c", "sleep 30 & sleep 30"});
    ADD_FAILURE() << "expected InterruptedError";
  } catch (const InterruptedError& e) {
    EXPECT_NE(std::string(e.what()).find("interrupted by SIGTERM while sh was running"),
              std::string::npos)
        << e.what();
  }
  firer.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(subprocess_children_running(), 0);
  // A stop already requested: nothing is started.
  EXPECT_THROW(run_subprocess({"true"}), InterruptedError);
}

TEST(SubprocessTest, WithAStopGraceTheSignalIsForwardedAndTheChildMayAnswer) {
  StopRequest stop(SIGTERM);
  std::thread firer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop.fire();
  });
  SubprocessOptions options;
  options.stop_grace = std::chrono::seconds(5);
  options.return_when_stopped = true;
  const auto result = run_subprocess(
      {"sh", "-c", "trap 'echo got TERM; exit 7' TERM; echo ready; while :; do sleep 0.05; done"},
      options);
  firer.join();
  EXPECT_EQ(result.stopped_by, SIGTERM);
  EXPECT_EQ(result.exit_code, 7);
  // The whole group got it: the shell's sleep too (the shell may say "Terminated").
  EXPECT_EQ(result.output.rfind("ready\n", 0), 0u) << result.output;
  EXPECT_NE(result.output.find("got TERM\n"), std::string::npos) << result.output;
  EXPECT_EQ(result.describe(), "was stopped by SIGTERM");
}

TEST(SubprocessTest, AProcessWideDeadlineCapsTheTimeout) {
  set_subprocess_deadline(std::chrono::steady_clock::now() + std::chrono::milliseconds(300));
  const auto result = run_subprocess({"sleep", "30"});
  set_subprocess_deadline(std::nullopt);
  EXPECT_TRUE(result.timed_out);
  EXPECT_LT(result.elapsed, std::chrono::seconds(5));
  EXPECT_TRUE(run_subprocess({"true"}).ok());
}

}  // namespace
}  // namespace pypto
