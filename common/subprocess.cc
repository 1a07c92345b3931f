#include "common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "pypto/error.h"

extern char** environ;

namespace pypto {

namespace {

using Clock = std::chrono::steady_clock;

std::atomic<int> g_stop_fd{-1};
std::atomic<StopSignalFn> g_stop_signal{nullptr};
std::atomic<int> g_children{0};
// steady_clock ticks of the process-wide deadline; max when there is none.
std::atomic<Clock::rep> g_deadline{Clock::time_point::max().time_since_epoch().count()};
// The process groups of the live children (their leaders are unreaped while listed,
// so the ids cannot be reused); 0 marks a free slot.
constexpr int kMaxTrackedChildren = 256;
std::atomic<pid_t> g_groups[kMaxTrackedChildren];

void track_group(pid_t pgid) {
  for (auto& slot : g_groups) {
    pid_t expected = 0;
    if (slot.compare_exchange_strong(expected, pgid)) return;
  }
}

void untrack_group(pid_t pgid) {
  for (auto& slot : g_groups) {
    pid_t expected = pgid;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

// The stop request's signal, or 0 when no stop was requested.
int stop_requested() {
  const int fd = g_stop_fd.load();
  if (fd < 0) return 0;
  pollfd item{fd, POLLIN, 0};
  if (::poll(&item, 1, 0) <= 0) return 0;
  const StopSignalFn signal_of = g_stop_signal.load();
  const int signo = signal_of ? signal_of() : 0;
  return signo > 0 ? signo : SIGTERM;
}

std::string signal_text(int signo) {
  switch (signo) {
    case SIGINT: return "SIGINT (Ctrl-C)";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "signal " + std::to_string(signo);
  }
}

// What the child reports through the exec-error pipe when it fails before exec.
struct ChildFailure {
  int stage;  // 0: chdir, 1: exec
  int err;
};

void close_quietly(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Marks every descriptor >= 3 close-on-exec so the tool inherits only its
// stdio. Runs in the forked child, so only async-signal-safe calls.
void cloexec_from_3() {
  if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return;
  long max_fd = ::sysconf(_SC_OPEN_MAX);
  if (max_fd < 0 || max_fd > 65536) max_fd = 65536;
  for (int fd = 3; fd < max_fd; ++fd) {
    int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
  }
}

[[noreturn]] void child_fail(int err_fd, int stage) {
  ChildFailure failure{stage, errno};
  ssize_t ignored = ::write(err_fd, &failure, sizeof failure);
  (void)ignored;
  ::_exit(127);
}

std::string env_name(const std::string& entry) { return entry.substr(0, entry.find('=')); }

int64_t ms_until(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return std::max<int64_t>(0, left.count());
}

void decode_status(int status, SubprocessResult& result) {
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
}

}  // namespace

void set_subprocess_stop(int fd, StopSignalFn signal_received) {
  g_stop_signal.store(signal_received);
  g_stop_fd.store(fd);
}

void clear_subprocess_stop(int fd) {
  int expected = fd;
  if (g_stop_fd.compare_exchange_strong(expected, -1)) g_stop_signal.store(nullptr);
}

int subprocess_children_running() { return g_children.load(); }

void set_subprocess_deadline(std::optional<Clock::time_point> deadline) {
  g_deadline.store(deadline.value_or(Clock::time_point::max()).time_since_epoch().count());
}

void kill_subprocess_groups() noexcept {
  for (auto& slot : g_groups)
    if (const pid_t pgid = slot.load(); pgid > 0) ::kill(-pgid, SIGKILL);
}

std::string SubprocessResult::describe() const {
  if (stopped_by != 0) return "was stopped by " + signal_text(stopped_by);
  if (timed_out) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.1f", static_cast<double>(elapsed.count()) / 1000.0);
    return std::string("timed out after ") + seconds + " s and was killed";
  }
  if (term_signal != 0)
    return "was killed by signal " + std::to_string(term_signal) + " (" + ::strsignal(term_signal) +
           ")";
  return "exited with code " + std::to_string(exit_code);
}

std::string format_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& arg : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !arg.empty() && std::all_of(arg.begin(), arg.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("-_./=:,+@%", c);
    });
    if (plain) {
      out += arg;
      continue;
    }
    out += '\'';
    for (char c : arg) out += (c == '\'') ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

std::optional<std::filesystem::path> find_program_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (!path || name.empty() || name.find('/') != std::string::npos) return std::nullopt;
  std::string dirs = path;
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (dir.empty()) dir = ".";  // an empty PATH entry means the current directory
    std::filesystem::path candidate = std::filesystem::path(dir) / name;
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0)
      return std::filesystem::absolute(candidate, ec).lexically_normal();
    start = end + 1;
  }
  return std::nullopt;
}

SubprocessResult run_subprocess(const std::vector<std::string>& argv,
                                const SubprocessOptions& options) {
  if (argv.empty() || argv[0].empty()) throw ToolError("internal error: empty command to run");

  // Everything the child needs is prepared before fork: in a threaded
  // process the child may only make async-signal-safe calls.
  std::vector<char*> c_argv;
  c_argv.reserve(argv.size() + 1);
  for (const auto& arg : argv) c_argv.push_back(const_cast<char*>(arg.c_str()));
  c_argv.push_back(nullptr);

  std::vector<std::string> env_storage;
  std::vector<char*> c_envp;
  if (!options.extra_env.empty()) {
    std::set<std::string> overridden;
    for (const auto& entry : options.extra_env) overridden.insert(env_name(entry));
    for (char** e = environ; e && *e; ++e)
      if (!overridden.count(env_name(*e))) env_storage.emplace_back(*e);
    for (const auto& entry : options.extra_env) env_storage.push_back(entry);
    for (auto& entry : env_storage) c_envp.push_back(entry.data());
    c_envp.push_back(nullptr);
  }
  const std::string cwd = options.cwd ? options.cwd->string() : std::string();

  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0)
    throw InfraError(std::string("cannot create a pipe to run ") + argv[0] + ": " +
                     std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    int err = errno;
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw InfraError(std::string("cannot create a pipe to run ") + argv[0] + ": " +
                     std::strerror(err));
  }

  if (const int signo = stop_requested()) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    throw InterruptedError("interrupted by " + signal_text(signo) + " before " + argv[0] +
                           " was started");
  }
  const auto start = Clock::now();
  const auto deadline =
      std::min(start + options.timeout, Clock::time_point(Clock::duration(g_deadline.load())));
  const pid_t parent = ::getpid();
  const int death_signal = options.parent_death_signal;
  // Counted before fork: a signal handler that sees no child may let the process die.
  ++g_children;
  pid_t pid = ::fork();
  if (pid < 0) {
    --g_children;
    int err = errno;
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    throw InfraError(std::string("cannot fork to run ") + argv[0] + ": " + std::strerror(err));
  }
  if (pid == 0) {
    // Own process group, so a timeout can kill the tool and everything it started.
    ::setpgid(0, 0);
    if (death_signal > 0) {
      ::prctl(PR_SET_PDEATHSIG, death_signal);
      if (::getppid() != parent) ::_exit(128 + death_signal);  // the caller died already
    }
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(out_pipe[1], STDERR_FILENO);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) child_fail(err_pipe[1], 0);
    cloexec_from_3();
    if (c_envp.empty())
      ::execvp(c_argv[0], c_argv.data());
    else
      ::execvpe(c_argv[0], c_argv.data(), c_envp.data());
    child_fail(err_pipe[1], 1);
  }

  // Parent. Also set the group here: whichever of the two runs first wins the race.
  ::setpgid(pid, pid);
  track_group(pid);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  int out_fd = out_pipe[0];
  int err_fd = err_pipe[0];

  // The exec-error pipe closes on a successful exec, or carries why it failed.
  ChildFailure failure{};
  ssize_t got;
  do {
    got = ::read(err_fd, &failure, sizeof failure);
  } while (got < 0 && errno == EINTR);
  close_quietly(err_fd);
  if (got == static_cast<ssize_t>(sizeof failure)) {
    close_quietly(out_fd);
    int status;
    untrack_group(pid);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    --g_children;
    if (failure.stage == 0)
      throw ToolError("cannot run " + argv[0] + ": cannot enter directory " + cwd + ": " +
                      std::strerror(failure.err));
    std::string hint = failure.err == ENOENT ? " (is it installed and on PATH?)" : "";
    throw ToolError("cannot run " + argv[0] + ": " + std::strerror(failure.err) + hint);
  }

  SubprocessResult result;
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  bool eof = false;
  bool reaped = false;
  int status = 0;
  Clock::time_point reaped_at{};
  auto backoff = std::chrono::milliseconds(1);
  char buffer[65536];

  auto try_reap = [&] {
    // Unlisted first: once reaped, the group id may belong to someone else.
    untrack_group(pid);
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      reaped = true;
      reaped_at = Clock::now();
      close_quietly(pidfd);
    } else {
      track_group(pid);
    }
  };
  auto read_some = [&] {
    ssize_t n = ::read(out_fd, buffer, sizeof buffer);
    if (n > 0) {
      size_t room =
          options.max_output > result.output.size() ? options.max_output - result.output.size() : 0;
      result.output.append(buffer, std::min(room, static_cast<size_t>(n)));
      if (static_cast<size_t>(n) > room) result.output_truncated = true;
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      eof = true;
    }
  };

  int stop_signal = 0;
  while (!(eof && reaped)) {
    int64_t left = ms_until(deadline);
    if (left == 0) {
      result.timed_out = true;
      break;
    }
    if (!reaped && (stop_signal = stop_requested()) != 0) break;
    // A tool that exited may leave a grandchild holding the pipe (a daemon);
    // after a short grace the output is considered complete.
    if (reaped && Clock::now() - reaped_at > std::chrono::seconds(1)) break;
    pollfd fds[3];
    nfds_t n = 0;
    int out_index = -1;
    int pid_index = -1;
    if (const int stop_fd = g_stop_fd.load(); stop_fd >= 0 && !reaped) fds[n++] = {stop_fd, POLLIN, 0};
    if (!eof) {
      out_index = static_cast<int>(n);
      fds[n++] = {out_fd, POLLIN, 0};
    }
    if (!reaped && pidfd >= 0) {
      pid_index = static_cast<int>(n);
      fds[n++] = {pidfd, POLLIN, 0};
    }
    int wait_ms = static_cast<int>(std::min<int64_t>(left, 1000));
    if (reaped) wait_ms = std::min(wait_ms, 100);
    if (!reaped && pidfd < 0) {
      // No pidfd (old kernel): check the child with a bounded backoff.
      wait_ms = std::min<int>(wait_ms, static_cast<int>(backoff.count()));
      backoff = std::min(backoff * 2, std::chrono::milliseconds(50));
    }
    int ready = ::poll(fds, n, wait_ms);
    if (ready < 0 && errno != EINTR) break;
    if (ready > 0 && out_index >= 0 && fds[out_index].revents) read_some();
    if (!reaped && (pidfd < 0 || (ready > 0 && pid_index >= 0 && fds[pid_index].revents)))
      try_reap();
  }

  if (stop_signal != 0 && options.stop_grace.count() > 0) {
    // The child has children of its own to stop: pass the signal on and give it time.
    ::kill(-pid, stop_signal);
    const auto grace_deadline = Clock::now() + options.stop_grace;
    while (!reaped && ms_until(grace_deadline) > 0) {
      pollfd fds[2];
      nfds_t n = 0;
      if (!eof) fds[n++] = {out_fd, POLLIN, 0};
      if (pidfd >= 0) fds[n++] = {pidfd, POLLIN, 0};
      const int wait_ms = pidfd >= 0 ? static_cast<int>(std::min<int64_t>(ms_until(grace_deadline), 1000)) : 10;
      const int ready = ::poll(fds, n, wait_ms);
      if (ready < 0 && errno != EINTR) break;
      if (!eof && ready > 0 && fds[0].revents) read_some();
      try_reap();
    }
  }
  if (!reaped) {
    // Timed out, stopped (or poll failed): never leave the tool running behind us.
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);  // in case setpgid lost a race with exec
    untrack_group(pid);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    // Whatever the killed group had written is still useful in a message.
    auto drain_deadline = Clock::now() + std::chrono::milliseconds(200);
    while (!eof) {
      pollfd fd{out_fd, POLLIN, 0};
      if (::poll(&fd, 1, static_cast<int>(ms_until(drain_deadline))) <= 0) break;
      read_some();
    }
  }
  --g_children;
  // Whatever the child wrote until it ended (a forwarded signal lets it say goodbye).
  const auto last_words = Clock::now() + std::chrono::milliseconds(100);
  while (!eof && stop_signal != 0 && Clock::now() < last_words) {
    pollfd fd{out_fd, POLLIN, 0};
    if (::poll(&fd, 1, 0) <= 0) break;
    read_some();
  }
  close_quietly(pidfd);
  close_quietly(out_fd);
  decode_status(status, result);
  result.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  if (stop_signal != 0) {
    result.stopped_by = stop_signal;
    if (!options.return_when_stopped)
      throw InterruptedError("interrupted by " + signal_text(stop_signal) + " while " + argv[0] +
                             " was running; it was stopped");
  }
  return result;
}

}  // namespace pypto
