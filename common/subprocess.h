// Running a tool (the host C++ compiler, pypto-ptoas) as a child process:
// argv only, never a shell; stdout and stderr captured together, the way a
// user would see them in a terminal; every run has a deadline.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace pypto {

struct SubprocessOptions {
  // When exceeded, the child's whole process group is killed (SIGKILL).
  std::chrono::milliseconds timeout = std::chrono::minutes(10);
  // Working directory of the child; the caller's when unset.
  std::optional<std::filesystem::path> cwd;
  // "NAME=value" entries added to (or replacing in) the inherited environment.
  std::vector<std::string> extra_env;
  // Output beyond this many bytes is read and dropped (output_truncated is set).
  size_t max_output = size_t{16} << 20;
};

struct SubprocessResult {
  int exit_code = -1;   // valid when the child exited normally
  int term_signal = 0;  // signal that ended the child, 0 when it exited
  bool timed_out = false;
  bool output_truncated = false;
  std::string output;  // stdout and stderr, interleaved as written
  std::chrono::milliseconds elapsed{0};

  bool ok() const { return !timed_out && term_signal == 0 && exit_code == 0; }
  // "exited with code 1", "was killed by signal 11 (Segmentation fault)", "timed out after 30 s".
  std::string describe() const;
};

// Runs argv[0] (looked up in PATH when it has no '/') with stdin from /dev/null.
// Throws ToolError naming the program when it cannot be executed at all
// (ENOENT, EACCES, ...); any other outcome is reported in the result.
// Waits in poll(2) on the output pipe and a pidfd: no busy waiting.
SubprocessResult run_subprocess(const std::vector<std::string>& argv,
                                const SubprocessOptions& options = {});

// The command quoted for a POSIX shell, for messages ("run it by hand: ...").
std::string format_command(const std::vector<std::string>& argv);

// The first executable regular file called `name` in the directories of PATH.
std::optional<std::filesystem::path> find_program_in_path(const std::string& name);

}  // namespace pypto
