#include "launch/job.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <set>

#include "common/log.h"
#include "common/subprocess.h"
#include "launch/session.h"
#include "pypto/error.h"

extern char** environ;

namespace pypto::launch {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string env_name(const std::string& entry) { return entry.substr(0, entry.find('=')); }

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Whole milliseconds until `deadline`, rounded up so that a wait never ends
// just short of it and turns into a string of zero-timeout polls.
int ms_until(Clock::time_point deadline) {
  const auto left = deadline - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  const auto ms = std::chrono::ceil<milliseconds>(left).count();
  return static_cast<int>(std::min<int64_t>(ms, INT_MAX));
}

void sleep_for(milliseconds duration) {
  timespec left{static_cast<time_t>(duration.count() / 1000),
                static_cast<long>((duration.count() % 1000) * 1000000)};
  while (::nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
}

// A child whose SIGCHLD is ignored is reaped by the kernel and its status is
// lost (waitpid fails with ECHILD): the job needs the default disposition.
void ensure_sigchld_not_ignored() {
  struct sigaction current {};
  if (::sigaction(SIGCHLD, nullptr, &current) != 0) return;
  if (current.sa_handler != SIG_IGN && !(current.sa_flags & SA_NOCLDWAIT)) return;
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  ::sigaction(SIGCHLD, &fallback, nullptr);
  log::debug("SIGCHLD was ignored; reset to the default so the launched job can be reaped");
}

std::string start_hint(const std::string& program, int err) {
  const std::string name = std::filesystem::path(program).filename().string();
  for (const char* mpi : {"mpirun", "mpiexec", "orterun"})
    if (name.rfind(mpi, 0) == 0)
      return "; install Open MPI (Debian: apt-get install openmpi-bin) or set PYPTO_MPIRUN to "
             "its mpirun";
  return err == ENOENT ? " (is it installed and on PATH?)" : "";
}

ToolError start_error(const std::string& program, int err) {
  return ToolError("cannot start " + program + ": " + std::strerror(err) +
                   start_hint(program, err));
}

// Runs in the forked child until exec: async-signal-safe calls only.
[[noreturn]] void exec_child(const char* path, char* const* argv, char* const* envp,
                             bool stop_with_caller, pid_t parent, int err_fd, int stderr_fd) {
  // Session and process group of its own: the terminal's SIGINT does not reach
  // the job, and every process it starts can be found again (launch/session.h).
  ::setsid();
  if (stop_with_caller) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    // The caller may have died before prctl took effect.
    if (::getppid() != parent) ::_exit(128 + SIGTERM);
  }
  // The caller's dispositions and mask (ignored SIGPIPE, blocked SIGINT for a
  // signalfd) must not leak into mpirun.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig)
    if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // The agents read nothing from stdin; a job outside the terminal's
  // foreground group that read the terminal would be stopped (SIGTTIN).
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0 && devnull != STDIN_FILENO) {
    ::dup2(devnull, STDIN_FILENO);
    ::close(devnull);
  }
  if (stderr_fd >= 0) ::dup2(stderr_fd, STDERR_FILENO);  // the relay's pipe
  // Only stdio is inherited: not the caller's sockets or the exec-error pipe.
  ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
  ::execve(path, argv, envp);
  int err = errno;
  ssize_t ignored = ::write(err_fd, &err, sizeof err);
  (void)ignored;
  ::_exit(127);
}

}  // namespace

Job Job::start(const std::vector<std::string>& argv, const JobOptions& options) {
  if (argv.empty() || argv[0].empty()) throw InfraError("internal error: empty command to start");

  // PATH lookup before fork: execvpe is not async-signal-safe.
  std::string path = argv[0];
  if (path.find('/') == std::string::npos) {
    auto found = find_program_in_path(path);
    if (!found) throw start_error(argv[0], ENOENT);
    path = found->string();
  }

  std::vector<char*> c_argv;
  c_argv.reserve(argv.size() + 1);
  for (const auto& arg : argv) c_argv.push_back(const_cast<char*>(arg.c_str()));
  c_argv.push_back(nullptr);

  std::set<std::string> overridden;
  for (const auto& entry : options.extra_env) overridden.insert(env_name(entry));
  std::vector<std::string> env_storage;
  for (char** e = environ; e && *e; ++e)
    if (!overridden.count(env_name(*e))) env_storage.emplace_back(*e);
  for (const auto& entry : options.extra_env) env_storage.push_back(entry);
  std::vector<char*> c_envp;
  c_envp.reserve(env_storage.size() + 1);
  for (auto& entry : env_storage) c_envp.push_back(entry.data());
  c_envp.push_back(nullptr);

  ensure_sigchld_not_ignored();

  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0)
    throw InfraError("cannot create a pipe to start " + argv[0] + ": " + std::strerror(errno));
  int out_pipe[2] = {-1, -1};
  if (options.on_stderr_line && ::pipe2(out_pipe, O_CLOEXEC) != 0) {
    const int err = errno;
    ::close(err_pipe[0]);
    ::close(err_pipe[1]);
    throw InfraError("cannot create a pipe for the output of " + argv[0] + ": " +
                     std::strerror(err));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    for (int fd : {err_pipe[0], err_pipe[1], out_pipe[0], out_pipe[1]})
      if (fd >= 0) ::close(fd);
    throw InfraError("cannot fork to start " + argv[0] + ": " + std::strerror(err));
  }
  if (pid == 0)
    exec_child(path.c_str(), c_argv.data(), c_envp.data(), options.stop_with_caller, parent,
               err_pipe[1], out_pipe[1]);

  ::close(err_pipe[1]);
  if (out_pipe[1] >= 0) ::close(out_pipe[1]);
  // The pipe closes on a successful exec, or carries the errno of a failed one.
  int child_errno = 0;
  ssize_t got;
  do {
    got = ::read(err_pipe[0], &child_errno, sizeof child_errno);
  } while (got < 0 && errno == EINTR);
  ::close(err_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof child_errno)) {
    if (out_pipe[0] >= 0) ::close(out_pipe[0]);
    int status;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    throw start_error(argv[0], child_errno);
  }

  // Without pidfds (kernels before 5.3) wait_for falls back to short sleeps.
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  Job job(pid, pidfd, argv, nullptr);  // owns the child from here on, whatever throws next
  if (out_pipe[0] >= 0)
    job.relay_ = std::make_unique<StderrRelay>(out_pipe[0], STDERR_FILENO, options.on_stderr_line,
                                              options.drop_stderr_block);
  log::debug("started {} as pid {}", format_command(argv), pid);
  return job;
}

Job::Job(Job&& other) noexcept
    : pid_(other.pid_),
      pidfd_(other.pidfd_),
      argv_(std::move(other.argv_)),
      status_(other.status_),
      relay_(std::move(other.relay_)),
      finished_(other.finished_) {
  other.pid_ = -1;
  other.pidfd_ = -1;
}

Job& Job::operator=(Job&& other) noexcept {
  if (this != &other) {
    release();
    pid_ = other.pid_;
    pidfd_ = other.pidfd_;
    argv_ = std::move(other.argv_);
    status_ = other.status_;
    relay_ = std::move(other.relay_);
    finished_ = other.finished_;
    other.pid_ = -1;
    other.pidfd_ = -1;
  }
  return *this;
}

Job::~Job() { release(); }

void Job::release() noexcept {
  if (pid_ >= 0 && !finished_) {
    try {
      const ExitStatus status = stop(kDestructorGrace);
      log::debug("stopped {} (pid {}) on release: it {}", argv_.empty() ? "" : argv_[0], pid_,
                 status.describe());
    } catch (...) {
      // Logging may throw; the processes have been signalled regardless.
    }
  }
  close_fd(pidfd_);
  relay_.reset();
  pid_ = -1;
}

bool Job::reap(int options) {
  if (status_) return true;
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, options);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) {
    status_ = ExitStatus::from_wait_status(status);
  } else if (r < 0 && errno == ECHILD) {
    status_ = ExitStatus{};  // reaped elsewhere: gone, status unknown
  } else {
    return false;
  }
  close_fd(pidfd_);
  // What the leader wrote before it exited is handled before its exit is reported.
  if (relay_) relay_->finish(Clock::now() + kRelayDrain);
  return true;
}

std::optional<ExitStatus> Job::poll() {
  if (pid_ < 0) return status_;
  reap(WNOHANG);
  return status_;
}

std::optional<ExitStatus> Job::wait_for(milliseconds timeout) {
  if (pid_ < 0) return status_;
  const auto deadline = Clock::now() + timeout;
  auto backoff = milliseconds(1);
  while (!reap(WNOHANG)) {
    const int left = ms_until(deadline);
    if (left == 0) return std::nullopt;
    if (pidfd_ >= 0) {
      pollfd fd{pidfd_, POLLIN, 0};
      if (::poll(&fd, 1, left) < 0 && errno != EINTR)
        sleep_for(std::min(backoff, milliseconds(left)));
    } else {
      sleep_for(std::min(backoff, milliseconds(left)));
      backoff = std::min(backoff * 2, milliseconds(50));
    }
  }
  return status_;
}

ExitStatus Job::wait() {
  if (pid_ >= 0) reap(0);
  return status_.value_or(ExitStatus{});
}

std::vector<pid_t> Job::members() const {
  if (pid_ < 0 || finished_) return {};
  std::vector<pid_t> members = session_members(pid_);
  if (!status_) members.erase(std::remove(members.begin(), members.end(), pid_), members.end());
  return members;
}

void Job::signal_all(int signal) {
  // The group first, atomically (no member can fork its way out of it), while
  // the unreaped leader keeps the group id from being reused; then the session,
  // for ranks that Open MPI moved into groups of their own.
  if (!status_) ::kill(-pid_, signal);
  signal_session(pid_, signal);
}

bool Job::wait_session_empty(Clock::time_point deadline) {
  auto backoff = milliseconds(1);
  for (;;) {
    if (session_members(pid_).empty()) return true;
    const int left = ms_until(deadline);
    if (left == 0) return false;
    // Members are not our children: nothing to wait on but time.
    sleep_for(std::min(backoff, milliseconds(left)));
    backoff = std::min(backoff * 2, milliseconds(50));
  }
}

void Job::kill_session() {
  signal_all(SIGKILL);
  if (!status_) reap(0);
  // SIGKILL is prompt; repeat it for anything forked meanwhile.
  const auto kill_deadline = Clock::now() + std::chrono::seconds(2);
  while (!wait_session_empty(std::min(kill_deadline, Clock::now() + milliseconds(100)))) {
    if (Clock::now() >= kill_deadline) {
      log::warn("processes of the job {} survived SIGKILL (uninterruptible?)", pid_);
      break;
    }
    signal_session(pid_, SIGKILL);
  }
}

ExitStatus Job::kill_all() {
  if (pid_ < 0) return status_.value_or(ExitStatus{});
  if (finished_) return *status_;
  kill_session();
  finished_ = true;
  close_fd(pidfd_);
  return *status_;
}

ExitStatus Job::stop(milliseconds grace) {
  if (pid_ < 0) return status_.value_or(ExitStatus{});
  if (finished_) return *status_;
  const auto deadline = Clock::now() + grace;
  // A job that already ended on its own is not signalled at all.
  if (!(reap(WNOHANG) && wait_session_empty(Clock::now()))) {
    signal_all(SIGTERM);
    // A stopped process (SIGSTOP, a debugger) acts on SIGTERM only once continued.
    signal_all(SIGCONT);
    if (!status_) wait_for(milliseconds(ms_until(deadline)));
    if (!(status_ && wait_session_empty(deadline))) {
      kill_session();
    }
  }
  finished_ = true;
  close_fd(pidfd_);
  return *status_;
}

}  // namespace pypto::launch
