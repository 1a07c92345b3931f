// A child process tree that can always be stopped: the rank agents' mpirun
// (docs/launch.md). The child runs in a session and process group of its own
// (setsid() before exec), with stdin from /dev/null and stdout/stderr
// inherited, so the user sees the agents' logs.
//
// Ctrl-C: the job is not in the terminal's foreground process group, so a
// terminal's SIGINT reaches only the caller. The caller decides: it should
// catch SIGINT (signalfd, a flag) and call stop(); a caller killed by SIGINT
// outright still takes mpirun down through the parent-death signal below.
//
// Stopping: stop() sends SIGTERM to every process of the job's session (which
// includes ranks that Open MPI moved into process groups of their own; see
// launch/session.h), waits up to a grace period for mpirun to exit and for
// the session to empty, then SIGKILLs whatever is left and reaps mpirun. The
// destructor does the same when the job was not stopped, so a Job going out of
// scope, also during stack unwinding from an exception, leaves no process behind.
//
// A Job is owned by one thread; its methods are not synchronized.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launch/exit_status.h"
#include "launch/stderr_relay.h"

namespace pypto::launch {

struct JobOptions {
  // NAME=VALUE added to (or replacing in) the inherited environment.
  std::vector<std::string> extra_env;
  // The job's leader gets SIGTERM when the thread that started it ends
  // (PR_SET_PDEATHSIG), so even a caller killed with SIGKILL leaves no mpirun
  // behind. Linux ties this to the starting *thread*: start long-lived jobs
  // from a thread that outlives them (the main thread), or turn it off.
  bool stop_with_caller = true;
  // When set, the child's stderr is a pipe relayed to ours (launch/stderr_relay.h)
  // and every line it writes is handed to this, on the relay's thread. Once poll()
  // or wait() reports the leader's exit, what it wrote has been handled (up to
  // kRelayDrain after its exit, for orphans that keep the pipe open).
  StderrRelay::LineHandler on_stderr_line;
  // With on_stderr_line: a framed block of the child's stderr for which this
  // returns true is not copied (launch/stderr_relay.h).
  StderrRelay::BlockFilter drop_stderr_block;
};

class Job {
 public:
  // The grace the destructor gives before SIGKILL: mpirun needs a moment to
  // forward SIGTERM to its ranks and tear down its daemons.
  static constexpr std::chrono::milliseconds kDestructorGrace{3000};
  static constexpr std::chrono::milliseconds kRelayDrain{1000};

  // Starts argv[0] (looked up in PATH when it has no '/'). Throws ToolError
  // naming the program when it cannot be executed (ENOENT, EACCES; for mpirun
  // the message says to install openmpi-bin), InfraError when the process
  // cannot be created (fork, pipe). When SIGCHLD is ignored in this process
  // (which would make the kernel reap the child and lose its status), its
  // disposition is reset to the default first.
  static Job start(const std::vector<std::string>& argv, const JobOptions& options = {});

  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;
  Job(Job&& other) noexcept;
  Job& operator=(Job&& other) noexcept;  // stops the job this one held
  ~Job();                                // stop(kDestructorGrace) unless already stopped

  pid_t pid() const { return pid_; }
  // The job's process group and session id: both equal pid().
  pid_t pgid() const { return pid_; }
  const std::vector<std::string>& argv() const { return argv_; }

  // Non-blocking: the leader's status once it has exited (reaped with
  // waitpid(WNOHANG)), nullopt while it runs. The status is cached.
  std::optional<ExitStatus> poll();
  // Sleeps until the leader exits or the timeout passes (nullopt). Sleeps in
  // poll(2) on a pidfd, never busy-waits.
  std::optional<ExitStatus> wait_for(std::chrono::milliseconds timeout);
  // Blocks until the leader exits.
  ExitStatus wait();

  // SIGTERM to the whole job, up to `grace` for the leader to exit and the
  // session to empty, then SIGKILL to what is left; reaps the leader and
  // returns its status. Processes that outlived the leader (orphaned ranks)
  // are stopped as well. Idempotent: later calls return the same status.
  ExitStatus stop(std::chrono::milliseconds grace);

  // SIGKILL to every process of the job at once, without a SIGTERM first, then
  // reaps the leader: for an mpirun that is already tearing its job down, where a
  // SIGTERM would hit its half-done cleanup (it crashed in PMIx_Finalize). Idempotent.
  ExitStatus kill_all();

  // The job's live processes besides an unreaped leader (diagnostics, tests).
  std::vector<pid_t> members() const;

  // A descriptor that becomes readable when the leader exits (a pidfd), for a
  // caller that waits on several things at once (zmq_poll accepts plain
  // descriptors); -1 when the kernel has no pidfds or after the leader was
  // reaped. Owned by the Job.
  int exit_fd() const { return pidfd_; }

 private:
  Job(pid_t pid, int pidfd, std::vector<std::string> argv, std::unique_ptr<StderrRelay> relay)
      : pid_(pid), pidfd_(pidfd), argv_(std::move(argv)), relay_(std::move(relay)) {}
  void release() noexcept;
  bool reap(int options);
  void signal_all(int signal);
  bool wait_session_empty(std::chrono::steady_clock::time_point deadline);
  // SIGKILL to the whole job, repeated for anything forked meanwhile, until its
  // session is empty (2 s at most); reaps the leader.
  void kill_session();

  pid_t pid_ = -1;
  int pidfd_ = -1;
  std::vector<std::string> argv_;
  std::optional<ExitStatus> status_;
  std::unique_ptr<StderrRelay> relay_;
  // Set once the leader is reaped and its session was seen empty: from then
  // on the session id is never scanned again, as its number may be reused.
  bool finished_ = false;
};

}  // namespace pypto::launch
