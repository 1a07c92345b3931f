// Ctrl-C, SIGTERM and SIGHUP for a coordinator that has children to stop.
// While an InterruptScope lives, SIGINT/SIGTERM/SIGHUP set a flag and make
// fd() readable (a self-pipe), so whoever waits (the agent pool's poll(2),
// run_subprocess) wakes at once, stops what it started and only then exits
// with 128 + the signal (InterruptedError: 130, 143, 129).
//
// kAlways (the L3 worker): the signal never kills the process; the event loop
// aborts the agents and stops the mpirun job.
// kWhileChildren (every command): the signal is deferred only while a
// run_subprocess child (a compiler, an exec --manifest entry) runs, which is
// then stopped with its process group; with no child the process exits at
// once with 128 + the signal, as if the signal had killed it.
//
// Scopes nest: an inner scope replaces the outer one until it ends.
#pragma once

#include <csignal>

namespace pypto::coord {

class InterruptScope {
 public:
  enum class Mode { kAlways, kWhileChildren };
  explicit InterruptScope(Mode mode = Mode::kAlways);
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

  // Readable once a signal arrived; -1 when no scope is active.
  static int fd();
  // The signal that arrived, 0 when none.
  static int signal_received();
  static const char* signal_name(int signo);  // "SIGINT (Ctrl-C)", ...
  // What an interrupted command exits with: 128 + the signal (130 SIGINT, 143
  // SIGTERM, 129 SIGHUP), as a shell reports a process the signal killed.
  static int exit_code(int signo) { return 128 + (signo > 0 ? signo : SIGINT); }

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
  struct sigaction old_hup_ {};
  int outer_pipe_[2] = {-1, -1};
  int outer_signal_ = 0;
  Mode outer_mode_ = Mode::kAlways;
};

}  // namespace pypto::coord
