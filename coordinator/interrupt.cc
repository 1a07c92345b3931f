#include "coordinator/interrupt.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "common/error.h"

namespace pypto::coord {

namespace {

std::atomic<int> g_signal{0};
int g_pipe[2] = {-1, -1};

void on_signal(int signo) {
  const int saved = errno;
  g_signal.store(signo);
  const char byte = 1;
  // Async-signal-safe; a full pipe already wakes the reader.
  [[maybe_unused]] ssize_t n = ::write(g_pipe[1], &byte, 1);
  errno = saved;
}

}  // namespace

InterruptScope::InterruptScope() {
  if (::pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
    throw InfraError(std::string("cannot create the interrupt pipe: ") + std::strerror(errno));
  g_signal.store(0);
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: a blocked poll returns EINTR
  sigaction(SIGINT, &action, &old_int_);
  sigaction(SIGTERM, &action, &old_term_);
  sigaction(SIGHUP, &action, &old_hup_);
}

InterruptScope::~InterruptScope() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  sigaction(SIGHUP, &old_hup_, nullptr);
  ::close(g_pipe[0]);
  ::close(g_pipe[1]);
  g_pipe[0] = g_pipe[1] = -1;
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
