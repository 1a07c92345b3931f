#include "coordinator/interrupt.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "common/subprocess.h"
#include "pypto/error.h"

namespace pypto::coord {

namespace {

std::atomic<int> g_signal{0};
std::atomic<int> g_mode{static_cast<int>(InterruptScope::Mode::kAlways)};
int g_pipe[2] = {-1, -1};

int current_signal() { return g_signal.load(); }

// Async-signal-safe pieces only: write, _exit.
void write_text(const char* text) {
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, text, std::strlen(text));
}

void on_signal(int signo) {
  const int saved = errno;
  g_signal.store(signo);
  if (g_mode.load() == static_cast<int>(InterruptScope::Mode::kWhileChildren) &&
      subprocess_children_running() == 0) {
    // Nothing to stop: end as the signal would, but with the documented exit code.
    write_text("pypto-coord: error: interrupted by ");
    write_text(InterruptScope::signal_name(signo));
    write_text("\n");
    ::_exit(InterruptScope::exit_code(signo));
  }
  const char byte = 1;
  // A full pipe already wakes the reader.
  [[maybe_unused]] ssize_t n = ::write(g_pipe[1], &byte, 1);
  errno = saved;
}

}  // namespace

InterruptScope::InterruptScope(Mode mode) {
  int fresh[2];
  if (::pipe2(fresh, O_CLOEXEC | O_NONBLOCK) != 0)
    throw InfraError(std::string("cannot create the interrupt pipe: ") + std::strerror(errno));
  outer_pipe_[0] = g_pipe[0];
  outer_pipe_[1] = g_pipe[1];
  outer_signal_ = g_signal.load();
  outer_mode_ = static_cast<Mode>(g_mode.load());
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  for (int signo : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&action.sa_mask, signo);
  action.sa_flags = 0;  // no SA_RESTART: a blocked poll returns EINTR
  // The handlers stay off while the state changes under them.
  sigset_t block, previous;
  sigemptyset(&block);
  for (int signo : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&block, signo);
  ::pthread_sigmask(SIG_BLOCK, &block, &previous);
  g_pipe[0] = fresh[0];
  g_pipe[1] = fresh[1];
  g_signal.store(0);
  g_mode.store(static_cast<int>(mode));
  sigaction(SIGINT, &action, &old_int_);
  sigaction(SIGTERM, &action, &old_term_);
  sigaction(SIGHUP, &action, &old_hup_);
  set_subprocess_stop(g_pipe[0], current_signal);
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

InterruptScope::~InterruptScope() {
  sigset_t block, previous;
  sigemptyset(&block);
  for (int signo : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&block, signo);
  ::pthread_sigmask(SIG_BLOCK, &block, &previous);
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  sigaction(SIGHUP, &old_hup_, nullptr);
  clear_subprocess_stop(g_pipe[0]);
  ::close(g_pipe[0]);
  ::close(g_pipe[1]);
  // A signal that reached this scope still counts for the outer one.
  const int seen = g_signal.load();
  g_pipe[0] = outer_pipe_[0];
  g_pipe[1] = outer_pipe_[1];
  g_mode.store(static_cast<int>(outer_mode_));
  g_signal.store(outer_signal_ ? outer_signal_ : seen);
  if (g_pipe[0] >= 0) {
    set_subprocess_stop(g_pipe[0], current_signal);
    if (seen && !outer_signal_) {
      const char byte = 1;
      [[maybe_unused]] ssize_t n = ::write(g_pipe[1], &byte, 1);
    }
  }
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

int InterruptScope::fd() { return g_pipe[0]; }

int InterruptScope::signal_received() { return g_signal.load(); }

const char* InterruptScope::signal_name(int signo) {
  switch (signo) {
    case SIGINT: return "SIGINT (Ctrl-C)";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
  }
}

}  // namespace pypto::coord
