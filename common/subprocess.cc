#include "common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "common/error.h"

extern char** environ;

namespace pypto {

namespace {

using Clock = std::chrono::steady_clock;

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

std::string SubprocessResult::describe() const {
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

  const auto start = Clock::now();
  const auto deadline = start + options.timeout;
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    throw InfraError(std::string("cannot fork to run ") + argv[0] + ": " + std::strerror(err));
  }
  if (pid == 0) {
    // Own process group, so a timeout can kill the tool and everything it started.
    ::setpgid(0, 0);
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
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
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
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      reaped = true;
      reaped_at = Clock::now();
      close_quietly(pidfd);
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

  while (!(eof && reaped)) {
    int64_t left = ms_until(deadline);
    if (left == 0) {
      result.timed_out = true;
      break;
    }
    // A tool that exited may leave a grandchild holding the pipe (a daemon);
    // after a short grace the output is considered complete.
    if (reaped && Clock::now() - reaped_at > std::chrono::seconds(1)) break;
    pollfd fds[2];
    nfds_t n = 0;
    int out_index = -1;
    int pid_index = -1;
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

  if (!reaped) {
    // Timed out (or poll failed): never leave the tool running behind us.
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);  // in case setpgid lost a race with exec
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
  close_quietly(pidfd);
  close_quietly(out_fd);
  decode_status(status, result);
  result.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  return result;
}

}  // namespace pypto
