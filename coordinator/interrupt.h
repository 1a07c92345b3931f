// Ctrl-C and SIGTERM for a coordinator that has agents to stop. While an
// InterruptScope lives, SIGINT/SIGTERM/SIGHUP do not kill the process: they
// set a flag and make fd() readable, so the event loop (which sleeps in
// zmq_poll on that fd too) wakes at once, aborts the agents, stops the mpirun
// job and only then exits (130). The previous handlers come back afterwards.
#pragma once

#include <csignal>

namespace pypto::coord {

class InterruptScope {
 public:
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

  // Readable once a signal arrived (a self-pipe); -1 when no scope is active.
  static int fd();
  // The signal that arrived, 0 when none.
  static int signal_received();
  static const char* signal_name(int signo);  // "SIGINT", ...

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
  struct sigaction old_hup_ {};
};

}  // namespace pypto::coord
