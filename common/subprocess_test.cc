#include "common/subprocess.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>

#include "common/error.h"

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

}  // namespace
}  // namespace pypto
