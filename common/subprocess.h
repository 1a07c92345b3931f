// Running a tool (the host C++ compiler, pypto-ptoas) as a child process:
// argv only, never a shell; stdout and stderr captured together, the way a
// user would see them in a terminal; every run has a deadline.
#pragma once

#include <chrono>
#include <csignal>
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
  // On a stop request (set_subprocess_stop): zero kills the child's process group at
  // once (SIGKILL); otherwise the signal that arrived is forwarded to the group and
  // SIGKILL follows after this long (a child that has its own children to stop).
  std::chrono::milliseconds stop_grace{0};
  // Sent to the child when the thread that started it ends (PR_SET_PDEATHSIG), so a
  // caller killed with SIGKILL leaves no tool running; 0 for none.
  int parent_death_signal = SIGKILL;
  // On a stop request, return the result (stopped_by set, output kept) instead of
  // throwing InterruptedError.
  bool return_when_stopped = false;
};

struct SubprocessResult {
  int exit_code = -1;   // valid when the child exited normally
  int term_signal = 0;  // signal that ended the child, 0 when it exited
  bool timed_out = false;
  int stopped_by = 0;   // the signal of a stop request that ended the run (return_when_stopped)
  bool output_truncated = false;
  std::string output;  // stdout and stderr, interleaved as written
  std::chrono::milliseconds elapsed{0};

  bool ok() const { return !timed_out && stopped_by == 0 && term_signal == 0 && exit_code == 0; }
  // "exited with code 1", "was killed by signal 11 (Segmentation fault)", "timed out after 30 s".
  std::string describe() const;
};

// A process-wide stop request: `fd` becomes readable, and stays readable, once the
// process was asked to stop (a signal handler's self-pipe), and `signal_received`
// returns that signal. While one is set, every run_subprocess waits on it too;
// when it fires the child is stopped (SubprocessOptions::stop_grace) and
// InterruptedError is thrown. clear_subprocess_stop(fd)
// removes it again when it is still `fd`.
using StopSignalFn = int (*)();
void set_subprocess_stop(int fd, StopSignalFn signal_received);
void clear_subprocess_stop(int fd);
// A process-wide deadline that caps every run_subprocess's own timeout (a rank agent's
// prepare deadline covers each compile it runs); nullopt removes it.
void set_subprocess_deadline(std::optional<std::chrono::steady_clock::time_point> deadline);

// Children of run_subprocess alive right now. Async-signal-safe: a signal handler
// uses it to decide whether there is anything to stop before the process exits.
int subprocess_children_running();
// SIGKILL to the process group of every run_subprocess child alive now. Async-signal-
// safe: for a process about to exit from a signal handler, so that no compiler (nor
// its cc1plus) outlives it.
void kill_subprocess_groups() noexcept;

// Runs argv[0] (looked up in PATH when it has no '/') with stdin from /dev/null.
// Throws ToolError naming the program when it cannot be executed at all
// (ENOENT, EACCES, ...), InterruptedError on a stop request (above); any other
// outcome is reported in the result.
// Waits in poll(2) on the output pipe, a pidfd and the stop request: no busy waiting.
SubprocessResult run_subprocess(const std::vector<std::string>& argv,
                                const SubprocessOptions& options = {});

// The command quoted for a POSIX shell, for messages ("run it by hand: ...").
std::string format_command(const std::vector<std::string>& argv);

// The first executable regular file called `name` in the directories of PATH.
std::optional<std::filesystem::path> find_program_in_path(const std::string& name);

}  // namespace pypto
