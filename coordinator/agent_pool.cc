#include "coordinator/agent_pool.h"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <ctime>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "common/boot_id.h"
#include "common/log.h"
#include "common/rank_list.h"
#include "common/seconds_text.h"
#include "coordinator/interrupt.h"
#include "pypto/error.h"

namespace pypto::coord {

namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

// How long fail_lost keeps listening for the other agents' last words (a rank killed by
// mpirun's teardown says so) before it decides whom to blame.
constexpr milliseconds kBlameWindow{1500};
// How long next() may go on returning messages without looking at the agents'
// processes when no wait has seen a pidfd ready.
constexpr milliseconds kLivenessInterval{50};

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

// A pidfd for `pid` when it is a pypto-rank process of this host, else -1: the same
// host name may hide another PID namespace, so the process must look like an agent.
int open_agent_pidfd(int64_t pid) {
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  if (!comm || !std::getline(comm, name) || name.rfind("pypto-rank", 0) != 0) return -1;
  const long fd = ::syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0);
  return fd < 0 ? -1 : static_cast<int>(fd);
}

// The signal mpirun reports as having killed one of its ranks (its exit code is
// 128 + N then), 0 when it reports none.
int rank_signal_of(const AgentPool::JobEnd& end) {
  return !end.killed && end.code > 128 && end.code < 128 + 65 ? end.code - 128 : 0;
}

std::string signal_text(int signo) {
  const char* name = sigabbrev_np(signo);
  return std::string(name ? std::string("SIG") + name : "signal " + std::to_string(signo)) +
         " (" + ::strsignal(signo) + ")";
}

// A rank lost while it ran a dispatch fails the run as the program's fault (exit 1: its
// kernel may have crashed or exited); lost at any other time (startup, prepare, a
// window reset, idle) it is the environment's (exit 3). Always the same for the same
// phase, whatever the timing.
bool running_dispatch(const AgentInfo& agent) { return agent.activity.rfind("dispatch ", 0) == 0; }


wire::ChannelOptions control_options(const wire::RunKeys& keys) {
  wire::ChannelOptions options;
  options.curve_server = keys.server;
  return options;
}

bool is_wildcard_endpoint(const std::string& endpoint) {
  for (const char* wildcard : {"://0.0.0.0:", "://*:", "://[::]:", "://[*]:"})
    if (endpoint.find(wildcard) != std::string::npos) return true;
  return false;
}

}  // namespace

AgentPool::AgentPool(zmq::context_t& context, AgentPoolOptions options)
    : options_(std::move(options)),
      // One turn of next() sleeps at most a heartbeat interval; as much again is slack
      // for a busy machine. A silence counted is then at most 3 intervals short of the
      // real one, and the interval is at most a quarter of the timeout.
      pauses_(2 * options_.heartbeat_interval),
      keys_(wire::RunKeys::generate()),
      authenticator_(std::make_unique<wire::CurveAuthenticator>(context, keys_.client.public_key)),
      channel_(wire::Channel::bind(context, options_.bind, control_options(keys_))),
      hostname_(host_name()),
      boot_id_(kernel_boot_id()) {
  if (options_.world < 1) throw UsageError("the world size must be at least 1");
  authenticator_->monitor(channel_.socket());
  if (is_wildcard_endpoint(options_.bind) || is_wildcard_endpoint(endpoint()))
    log::warn("the control socket listens on every network interface ({}); peers without this "
              "run's key are refused, but bind one address the agents can reach "
              "(--bind tcp://ADDR:PORT) to keep it off other networks",
              endpoint());
  agents_.resize(static_cast<size_t>(options_.world));
  for (int r = 0; r < options_.world; ++r) agents_[static_cast<size_t>(r)].rank = r;
}

AgentPool::~AgentPool() {
  for (AgentInfo& agent : agents_)
    if (agent.pidfd >= 0) ::close(agent.pidfd);
}

std::string AgentPool::connect_endpoint() const {
  std::string endpoint = this->endpoint();
  for (const std::string wildcard : {"0.0.0.0", "*", "[::]"}) {
    const size_t at = endpoint.find("://" + wildcard + ":");
    if (at != std::string::npos) {
      endpoint.replace(at + 3, wildcard.size(),
                       options_.advertise_host.empty() ? hostname_ : options_.advertise_host);
      break;
    }
  }
  return endpoint;
}

void AgentPool::watch_job(std::function<std::optional<JobEnd>()> poll, int pidfd,
                          int64_t session,
                          std::function<std::optional<launch::RankEnded>()> notice) {
  job_poll_ = std::move(poll);
  job_notice_ = std::move(notice);
  job_pidfd_ = pidfd;
  job_session_ = session;
}

std::string AgentPool::describe(int rank) const {
  const AgentInfo& agent = this->agent(rank);
  if (agent.identity.empty()) return "rank " + std::to_string(rank);
  return "rank " + std::to_string(rank) + " (pid " + std::to_string(agent.pid) + " on " +
         agent.host + ")";
}

void AgentPool::set_activity(int rank, std::string activity) {
  agents_.at(static_cast<size_t>(rank)).activity = std::move(activity);
}

int AgentPool::rank_of(const std::string& identity) const {
  auto it = rank_by_identity_.find(identity);
  return it == rank_by_identity_.end() ? -1 : it->second;
}

void AgentPool::refuse(const std::string& identity, const wire::Refuse& refusal) {
  try {
    channel_.send_to(identity, refusal);
  } catch (const std::exception& e) {
    log::debug("could not deliver the REFUSE: {}", e.what());
  }
}

void AgentPool::drop_peer(const std::string& identity, const std::string& why,
                          std::optional<uint32_t> agent_version) {
  if (agent_version) {
    wire::Refuse refusal;
    refusal.reason = why;
    refusal.agent_version = *agent_version;
    refuse(identity, refusal);
  }
  dropped_log_.warn("control plane: " + why + "; the peer was dropped and the run goes on");
}

std::string AgentPool::identity_problem(const wire::Hello& hello) const {
  // Another host: its processes cannot be seen from here (CURVE vouches for the key).
  if (hello.host != hostname_) return "";
  const std::string pid = std::to_string(hello.pid);
  if (hello.pid <= 0) return "pid " + pid + " is not a process id";
  for (const AgentInfo& other : agents_)
    if (!other.identity.empty() && other.local && other.pid == hello.pid)
      return "pid " + pid + " is already rank " + std::to_string(other.rank);
  std::ifstream stat_file("/proc/" + pid + "/stat");
  std::string stat;
  if (!stat_file || !std::getline(stat_file, stat))
    return "no process " + pid + " runs on this host";
  // pid (comm) state ppid pgrp session ...
  const size_t open = stat.find('('), close = stat.rfind(')');
  if (open == std::string::npos || close == std::string::npos) return "";
  const std::string comm = stat.substr(open + 1, close - open - 1);
  if (comm.rfind("pypto-rank", 0) != 0)
    return "process " + pid + " is '" + comm + "', not a pypto-rank agent";
  std::istringstream fields(stat.substr(close + 2));
  std::string state;
  int64_t ppid = 0, pgrp = 0, session = 0;
  fields >> state >> ppid >> pgrp >> session;
  if (job_session_ > 0 && session != job_session_)
    return "process " + pid + " is not part of this run's mpirun job (its session is " +
           std::to_string(session) + ", the job's " + std::to_string(job_session_) + ")";
  std::ifstream environ_file("/proc/" + pid + "/environ", std::ios::binary);
  std::string environ((std::istreambuf_iterator<char>(environ_file)),
                      std::istreambuf_iterator<char>());
  const std::string key = std::string("OMPI_COMM_WORLD_RANK=");
  for (size_t at = 0; at < environ.size();) {
    const size_t end = std::min(environ.find('\0', at), environ.size());
    if (environ.compare(at, key.size(), key) == 0) {
      const std::string mpi_rank = environ.substr(at + key.size(), end - at - key.size());
      if (mpi_rank != std::to_string(hello.rank))
        return "process " + pid + " is MPI rank " + mpi_rank + ", not rank " +
               std::to_string(hello.rank);
    }
    at = end + 1;
  }
  return "";
}

void AgentPool::handle_hello(wire::Decoded& decoded) {
  const wire::Hello& hello = decoded.as<wire::Hello>();
  const std::string who = "rank " + std::to_string(hello.rank) + " (pid " +
                          std::to_string(hello.pid) + " on " + hello.host + ")";
  if (rank_of(decoded.identity) >= 0) {
    dropped_log_.warn("control plane: ignoring a second HELLO from " + who);
    return;
  }
  if (hello.world != options_.world) {
    const std::string reason =
        "this build runs on " + std::to_string(options_.world) +
        " ranks, but the agent's MPI world has " + std::to_string(hello.world) +
        "; launch the agents with mpirun -n " + std::to_string(options_.world);
    // Once every rank is here, a latecomer cannot be one of this run's agents.
    if (connected_ == options_.world) {
      drop_peer(decoded.identity, "refused " + who + ": " + reason, hello.protocol_version);
      return;
    }
    wire::Refuse refusal;
    refusal.reason = reason;
    refusal.agent_version = hello.protocol_version;
    refuse(decoded.identity, refusal);
    throw InfraError("refused " + who + ": " + reason);
  }
  AgentInfo& agent = agents_.at(static_cast<size_t>(hello.rank));
  if (!agent.identity.empty()) {
    // The rank that connected first (and passed the checks below) keeps its place.
    drop_peer(decoded.identity,
              "refused a second " + who + ": rank " + std::to_string(hello.rank) +
                  " is already connected (pid " + std::to_string(agent.pid) + " on " +
                  agent.host + "); do two agent jobs point at this coordinator?",
              hello.protocol_version);
    return;
  }
  if (const std::string problem = identity_problem(hello); !problem.empty()) {
    drop_peer(decoded.identity, "refused a HELLO claiming " + who + ": " + problem,
              hello.protocol_version);
    return;
  }
  agent.identity = decoded.identity;
  agent.host = hello.host;
  agent.pid = hello.pid;
  agent.mpi_thread_level = hello.mpi_thread_level;
  agent.held_hashes = hello.held_hashes;
  agent.same_kernel = !hello.boot_id.empty() && hello.boot_id == boot_id_;
  agent.local = hello.host == hostname_;
  if (agent.local) agent.pidfd = open_agent_pidfd(hello.pid);
  agent.last_heard = Clock::now();
  rank_by_identity_[agent.identity] = hello.rank;
  ++connected_;
  // Unguessable, so that only this agent can name a connection as its data connection.
  std::random_device random;
  while (agent.attach_token == 0)
    agent.attach_token = uint64_t{random()} << 32 | uint64_t{random()};

  wire::Welcome welcome;
  welcome.attach_token = agent.attach_token;
  welcome.run_id = options_.run_id;
  welcome.heartbeat_interval_ms = static_cast<uint32_t>(options_.heartbeat_interval.count());
  welcome.deadline_ms = static_cast<uint32_t>(options_.heartbeat_timeout.count());
  send(hello.rank, welcome, {}, decoded.envelope.request_id);
  log::debug("{} connected ({}, {})", describe(hello.rank), hello.mpi_thread_level,
             agent.local ? "watched by pidfd" : "watched by heartbeats");
}

void AgentPool::handle_attach(const wire::Decoded& decoded) {
  const wire::Attach& attach = std::get<wire::Attach>(decoded.message);
  const std::string who = "an ATTACH claiming rank " + std::to_string(attach.rank);
  if (attach.rank < 0 || attach.rank >= options_.world)
    return drop_peer(decoded.identity, "refused " + who + ": no such rank");
  AgentInfo& agent = agents_[static_cast<size_t>(attach.rank)];
  if (agent.identity.empty() || attach.token != agent.attach_token)
    return drop_peer(decoded.identity, "refused " + who + ": not the token of its WELCOME");
  if (!agent.data_identity.empty() || rank_of(decoded.identity) >= 0)
    return drop_peer(decoded.identity, "refused " + who + ": it has a data connection already");
  agent.data_identity = decoded.identity;
  agent.last_heard = Clock::now();
  rank_by_identity_[agent.data_identity] = attach.rank;
  log::debug("{}: its worker thread attached its data connection", describe(attach.rank));
}

std::optional<wire::Decoded> AgentPool::receive_now() {
  try {
    for (;;) {
      std::optional<wire::Decoded> decoded = channel_.receive(milliseconds(0));
      if (!decoded || !decoded->is<wire::Attach>()) return decoded;
      handle_attach(*decoded);
    }
  } catch (const wire::ProtocolVersionError& e) {
    // Both sides name both versions: the peer reads the REFUSE's frozen prefix.
    refuse(e.peer_identity(), wire::make_version_refusal(e.peer_rank(), e.peer_version()));
    // While the run starts, only its own (authenticated) agents can get here: an
    // installation mismatch, said at once. Later, a latecomer is dropped.
    if (connected_ < options_.world || rank_of(e.peer_identity()) >= 0) throw InfraError(e.what());
    dropped_log_.warn(std::string("control plane: ") + e.what() +
                      "; the peer was dropped and the run goes on");
    return std::nullopt;
  } catch (const wire::ProtocolError& e) {
    // A welcomed agent that breaks the protocol cannot be trusted with the run.
    if (const int rank = rank_of(e.peer_identity()); rank >= 0)
      throw InfraError(describe(rank) + ": " + e.what());
    dropped_log_.warn(std::string("control plane: ") + e.what() +
                      " (from a peer that has not said HELLO); dropped, the run goes on");
    return std::nullopt;
  }
}

void AgentPool::accept_all(Clock::time_point deadline, const std::string& hint) {
  while (connected_ < options_.world) {
    check_interrupt();
    if (job_poll_) {
      // Polled first: once mpirun's exit is seen, all it wrote has been read.
      const std::optional<JobEnd> ended = job_poll_();
      if (job_notice_) {
        const std::optional<launch::RankEnded> notice = job_notice_();
        if (notice && notice->rank >= 0 && notice->rank < options_.world) {
          const bool connected = !agents_[static_cast<size_t>(notice->rank)].identity.empty();
          throw InfraError(describe(notice->rank) +
                           (notice->signal != 0
                                ? " was killed by " + signal_text(notice->signal)
                                : " exited with code " + std::to_string(notice->exit_code)) +
                           (connected ? " while the run started" : " before it connected") +
                           " (mpirun: \"" + notice->notice + "\"); see mpirun's output above");
        }
      }
      if (ended) {
        std::vector<int> absent;
        for (const AgentInfo& agent : agents_)
          if (agent.identity.empty()) absent.push_back(agent.rank);
        // A rank that had connected and whose process is gone, without saying it was
        // stopped, went first: mpirun then stopped the others.
        note_gone_processes();
        std::vector<int> gone;
        for (const AgentInfo& agent : agents_)
          if (!agent.identity.empty() && agent.process_gone && !agent.stopped_by_signal)
            gone.push_back(agent.rank);
        std::string message;
        const int signo = rank_signal_of(*ended);
        if (gone.size() == 1) {
          message = describe(gone[0]) +
                    (signo != 0 ? " was killed by " + signal_text(signo)
                                : std::string(" ended without reporting an error")) +
                    " while the run started (" + ended->what + ")";
        } else if (signo != 0) {
          message = (absent.size() == 1 ? "rank " + rank_list(absent) + " was"
                                        : "one of rank(s) " + rank_list(absent) + " was") +
                    " killed by " + signal_text(signo) + " before it connected (" + ended->what +
                    ")";
        } else {
          message = "the agents' job ended before every rank connected: " + ended->what +
                    "; rank(s) " + rank_list(absent) + " never connected";
        }
        throw InfraError(message + "; see mpirun's output above");
      }
    }
    std::optional<wire::Decoded> decoded = receive_now();
    if (decoded) {
      if (decoded->is<wire::Hello>()) {
        handle_hello(*decoded);
      } else if (int rank = rank_of(decoded->identity); rank >= 0) {
        agents_[static_cast<size_t>(rank)].last_heard = Clock::now();
        if (auto* error = std::get_if<wire::AgentError>(&decoded->message)) {
          // Stopped by a signal (mpirun tearing the job down): a consequence, not the
          // cause; the job's end, next, says what happened.
          if (error->exit_code >= 128) {
            agents_[static_cast<size_t>(rank)].stopped_by_signal = error->message;
            continue;
          }
          throw InfraError("rank " + std::to_string(rank) + " failed while the run started: " +
                           error->message);
        }
      } else {
        dropped_log_.warn("control plane: ignoring a " + wire::message_type_name(decoded->type()) +
                          " from a peer that has not said HELLO");
      }
      continue;
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      std::vector<int> absent;
      for (const AgentInfo& agent : agents_)
        if (agent.identity.empty()) absent.push_back(agent.rank);
      const std::string missing = rank_list(absent);
      throw InfraError("only " + std::to_string(connected_) + " of " +
                       std::to_string(options_.world) + " agents connected to " +
                       connect_endpoint() + " in time; missing rank(s) " + missing + ". " + hint);
    }
    send_heartbeats(now);
    wait_readable(std::min(deadline, now + options_.heartbeat_interval));
  }
}

namespace {
int64_t monotonic_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}
}  // namespace

// Cristian's method: the agent's clock read half way through the round trip.
// Across hosts the error is at most half the round trip, so the fastest of a
// few rounds is kept. An agent on the coordinator's kernel (same boot id)
// reads the same clock, so its offset is exactly 0.
void AgentPool::measure_clocks(int rounds, Clock::time_point deadline) {
  for (int round = 0; round < rounds; ++round) {
    std::vector<bool> answered(agents_.size(), false);
    size_t waiting = 0;
    for (AgentInfo& agent : agents_) {
      if (agent.identity.empty()) continue;
      send(agent.rank, wire::ClockProbe{monotonic_ns()});
      ++waiting;
    }
    while (waiting > 0) {
      check_interrupt();
      std::optional<wire::Decoded> decoded = receive_now();
      if (!decoded) {
        const auto now = Clock::now();
        if (now >= deadline) {
          log::warn("{} agent(s) did not answer the clock probe in time; their hosts' clock "
                    "offsets are less precise", waiting);
          return;
        }
        wait_readable(std::min(deadline, now + options_.heartbeat_interval));
        continue;
      }
      const int rank = rank_of(decoded->identity);
      if (rank < 0) {
        log::warn("ignoring a {} from a peer that has not said HELLO",
                  wire::message_type_name(decoded->type()));
        continue;
      }
      AgentInfo& agent = agents_[static_cast<size_t>(rank)];
      agent.last_heard = Clock::now();
      if (auto* error = std::get_if<wire::AgentError>(&decoded->message)) {
        if (error->exit_code >= 128) {
          agent.stopped_by_signal = error->message;
          fail_lost(describe(rank) + " was stopped: " + error->message);
        }
        throw InfraError("rank " + std::to_string(rank) + " failed while the run started: " +
                         error->message);
      }
      const auto* reply = std::get_if<wire::ClockReply>(&decoded->message);
      if (reply == nullptr || answered[static_cast<size_t>(rank)]) continue;  // heartbeats
      answered[static_cast<size_t>(rank)] = true;
      --waiting;
      const int64_t received = monotonic_ns();
      const int64_t rtt = received - reply->coordinator_ns;
      if (agent.clock_rtt_ns == 0 || rtt < agent.clock_rtt_ns) {
        agent.clock_rtt_ns = std::max<int64_t>(rtt, 1);
        // An agent on this kernel reads this very clock: its offset is 0, not
        // an estimate off by half a (loaded) round trip.
        agent.clock_offset_ns =
            agent.same_kernel ? 0 : reply->agent_ns - (reply->coordinator_ns + received) / 2;
      }
    }
  }
}

void AgentPool::send(int rank, const wire::Message& message, std::vector<zmq::message_t> payloads,
                     uint64_t request_id) {
  AgentInfo& agent = agents_.at(static_cast<size_t>(rank));
  channel_.send_to(agent.identity, message, std::move(payloads), request_id);
  agent.last_sent = Clock::now();
}

void AgentPool::send_work(int rank, const wire::Message& message,
                          std::vector<zmq::message_t> payloads, uint64_t request_id) {
  const AgentInfo& agent = agents_.at(static_cast<size_t>(rank));
  // Not last_sent: the agent's control thread, which sends nothing on this connection's
  // behalf, still needs the heartbeats of the control connection.
  if (!agent.data_identity.empty())
    return channel_.send_to(agent.data_identity, message, std::move(payloads), request_id);
  send(rank, message, std::move(payloads), request_id);
}

void AgentPool::send_heartbeats(Clock::time_point now) {
  for (AgentInfo& agent : agents_) {
    if (agent.identity.empty() || agent.process_gone) continue;
    if (now - agent.last_sent < options_.heartbeat_interval) continue;
    try {
      send(agent.rank, wire::Heartbeat{});
    } catch (const std::exception& e) {
      // Mandatory routing: the peer's connection is gone.
      fail_lost(describe(agent.rank) + " cannot be reached (" + e.what() + ")");
    }
  }
}

void AgentPool::check_silence(Clock::time_point now) {
  for (const AgentInfo& agent : agents_) {
    if (agent.identity.empty() || agent.process_gone) continue;
    if (pauses_.silence(agent.last_heard, now) <= options_.heartbeat_timeout) continue;
    const auto silent = duration_cast<milliseconds>(now - agent.last_heard);
    const auto paused = duration_cast<milliseconds>(pauses_.paused_since(agent.last_heard));
    std::string message = describe(agent.rank) + " has been silent for " + seconds_text(silent) +
                          " s (heartbeat timeout " + seconds_text(options_.heartbeat_timeout) +
                          " s";
    if (paused.count() > 0)
      message += "; not counting " + seconds_text(paused) +
                 " s during which the coordinator did not run";
    message += ")";
    if (!agent.activity.empty()) message += " while running " + agent.activity;
    if (!agent.local) {
      std::vector<int> silent_ranks;
      for (const AgentInfo& other : agents_)
        if (!other.identity.empty() &&
            pauses_.silence(other.last_heard, now) > options_.heartbeat_timeout)
          silent_ranks.push_back(other.rank);
      if (const std::string hosts = lost_hosts(silent_ranks); !hosts.empty())
        message = hosts + " (unreachable or down); " + message;
    }
    message += "; its process or host is gone or stuck. The other ranks were stopped";
    // A stuck local agent (SIGSTOP, a hung kernel) would not act on ABORT and would hold
    // mpirun's teardown up: it goes first.
    if (agent.local && agent.pidfd >= 0) {
      ::syscall(SYS_pidfd_send_signal, agent.pidfd, SIGKILL, nullptr, 0);
      message += " (it was killed)";
    }
    if (running_dispatch(agent)) throw ProgramError(message);
    throw InfraError(message);
  }
}

void AgentPool::check_interrupt() const {
  if (const int signo = InterruptScope::signal_received()) {
    throw InterruptedError(std::string("interrupted by ") + InterruptScope::signal_name(signo) +
                           "; stopping every agent");
  }
}

bool AgentPool::note_gone_processes() {
  // One poll(2) for every pidfd (it was one per agent): next() runs this while
  // messages keep coming too.
  std::vector<pollfd> fds;
  std::vector<AgentInfo*> owners;
  for (AgentInfo& agent : agents_) {
    if (agent.pidfd < 0 || agent.process_gone) continue;
    fds.push_back({agent.pidfd, POLLIN, 0});
    owners.push_back(&agent);
  }
  if (job_pidfd_ >= 0) fds.push_back({job_pidfd_, POLLIN, 0});
  if (fds.empty() || ::poll(fds.data(), fds.size(), 0) <= 0) return job_pidfd_ < 0;
  for (size_t i = 0; i < owners.size(); ++i)
    if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) owners[i]->process_gone = true;
  return job_pidfd_ < 0 || (fds.back().revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

void AgentPool::wait_readable(Clock::time_point until) {
  std::vector<pollfd> others;
  if (InterruptScope::fd() >= 0) others.push_back({InterruptScope::fd(), POLLIN, 0});
  if (job_pidfd_ >= 0) others.push_back({job_pidfd_, POLLIN, 0});
  for (const AgentInfo& agent : agents_)
    if (agent.pidfd >= 0 && !agent.process_gone) others.push_back({agent.pidfd, POLLIN, 0});
  const auto remaining = duration_cast<milliseconds>(until - Clock::now());
  // Round up so a sub-millisecond remainder sleeps instead of spinning on 0 ms polls.
  channel_.wait(others, milliseconds(std::max<long>(1, remaining.count() + 1)));
  for (const pollfd& fd : others)
    if (fd.revents != 0 && fd.fd != InterruptScope::fd()) liveness_due_ = true;
}

std::optional<AgentPool::Incoming> AgentPool::next(Clock::time_point deadline) {
  while (true) {
    check_interrupt();
    const auto now = Clock::now();
    pauses_.tick(now);
    // The processes are looked at when the last wait saw one of their descriptors
    // ready, else at most every kLivenessInterval while messages keep coming: a
    // poll(2) of every pidfd per message was a seventh of the coordinator's time.
    if (liveness_due_ || now - last_liveness_check_ >= kLivenessInterval) {
      liveness_due_ = false;
      last_liveness_check_ = now;
      const bool job_may_have_ended = note_gone_processes();
      for (const AgentInfo& agent : agents_)
        if (agent.process_gone && !agent.stopped_by_signal)
          fail_lost("the process of " + describe(agent.rank) + " ended");
      if (job_poll_ && job_may_have_ended) {
        if (auto ended = job_poll_()) fail_lost("the agents' job: " + ended->what, ended->killed);
      }
    }

    std::optional<wire::Decoded> decoded = receive_now();
    if (decoded) {
      const int rank = rank_of(decoded->identity);
      if (rank < 0 || decoded->is<wire::Hello>()) {
        // Every rank is here: a HELLO is refused, anything else from a stranger ignored.
        if (decoded->is<wire::Hello>()) {
          handle_hello(*decoded);
        } else {
          dropped_log_.warn("control plane: ignoring a " +
                            wire::message_type_name(decoded->type()) +
                            " from a peer that has not said HELLO");
        }
        continue;
      }
      AgentInfo& agent = agents_[static_cast<size_t>(rank)];
      agent.last_heard = now;
      if (decoded->is<wire::Heartbeat>()) continue;
      if (auto* error = std::get_if<wire::AgentError>(&decoded->message)) {
        if (error->exit_code >= 128) {
          agent.stopped_by_signal = error->message;
          fail_lost(describe(rank) + " was stopped: " + error->message);
        }
        throw_agent_error<ProgramError>(describe(rank), error->message, error->exit_code);
      }
      return Incoming{rank, std::move(*decoded)};
    }

    send_heartbeats(now);
    check_silence(now);
    if (now >= deadline) return std::nullopt;
    Clock::time_point wake = std::min(deadline, now + options_.heartbeat_interval);
    if (job_poll_ && job_pidfd_ < 0) wake = std::min(wake, now + milliseconds(250));
    wait_readable(wake);
  }
}

void AgentPool::fail_lost(const std::string& trigger, bool launcher_killed) {
  // Listen a little longer: when one agent dies, mpirun stops the others, and each of
  // those says so (AGENT_ERROR 128+N) before it exits. The one that said nothing is
  // the one to blame.
  const auto triggered = Clock::now();
  const auto until = triggered + kBlameWindow;
  while (Clock::now() < until) {
    note_gone_processes();
    bool all_accounted = true;
    for (const AgentInfo& agent : agents_)
      if (!agent.identity.empty() && !agent.process_gone && !agent.stopped_by_signal)
        all_accounted = false;
    // mpirun's exit code names the signal of a killed rank: worth the wait.
    if (all_accounted && job_poll_ && !job_poll_()) all_accounted = false;
    if (all_accounted) break;
    try {
      while (auto decoded = channel_.receive(milliseconds(0))) {
        const int rank = rank_of(decoded->identity);
        if (rank < 0) continue;
        agents_[static_cast<size_t>(rank)].last_heard = Clock::now();
        if (auto* error = std::get_if<wire::AgentError>(&decoded->message))
          if (error->exit_code >= 128) agents_[static_cast<size_t>(rank)].stopped_by_signal = error->message;
      }
    } catch (const std::exception&) {
      // A garbled last word changes nothing about whom to blame.
    }
    wait_readable(std::min(until, Clock::now() + milliseconds(100)));
  }
  note_gone_processes();
  // An agent on another host has no pidfd: one that said nothing at all since
  // the failure (live agents heartbeat several times in the blame window, and
  // those stopped by mpirun say so) went down with its host or its link.
  for (AgentInfo& agent : agents_)
    if (!agent.local && !agent.identity.empty() && !agent.stopped_by_signal &&
        agent.last_heard < triggered)
      agent.process_gone = true;

  std::vector<int> culprits;
  for (const AgentInfo& agent : agents_)
    if (agent.process_gone && !agent.stopped_by_signal) culprits.push_back(agent.rank);
  if (launcher_killed) {
    // mpirun died first; its ranks went down with it (or are stopped now).
    std::vector<int> victims;
    for (const AgentInfo& agent : agents_)
      if (!agent.identity.empty()) victims.push_back(agent.rank);
    std::string message = trigger + "; the run is aborted";
    if (!victims.empty())
      message += " (rank(s) " + rank_list(victims) + " lost their launcher and were stopped)";
    throw InfraError(message);
  }
  if (culprits.empty()) {
    std::string message = trigger + "; the run is aborted";
    std::string stopped;
    for (const AgentInfo& agent : agents_)
      if (agent.stopped_by_signal) stopped += (stopped.empty() ? "" : ", ") + std::to_string(agent.rank);
    if (!stopped.empty()) message += " (rank(s) " + stopped + " were stopped by a signal)";
    throw InfraError(message);
  }
  // mpirun has usually ended by now; its exit code tells the signal of a killed rank,
  // and its notice how the first rank that ended did (an exit status too).
  int rank_signal = 0;
  if (job_poll_ && culprits.size() == 1)
    if (auto ended = job_poll_()) rank_signal = rank_signal_of(*ended);
  std::optional<launch::RankEnded> notice = job_notice_ ? job_notice_() : std::nullopt;
  bool during_dispatch = false;
  std::string message = lost_hosts(culprits);
  for (int rank : culprits) {
    const AgentInfo& agent = this->agent(rank);
    if (!message.empty()) message += "; ";
    if (notice && notice->rank == rank && notice->signal == 0 && notice->exit_code >= 0)
      message += describe(rank) + " exited with status " + std::to_string(notice->exit_code) +
                 (notice->improper ? " without finishing MPI" : "") +
                 " and without reporting an error";
    else if (agent.local && rank_signal != 0)
      message += describe(rank) + " was killed by " + signal_text(rank_signal) +
                 " without reporting an error";
    else
      message += describe(rank) +
                 (agent.local ? " ended without reporting an error (it exited, crashed or was "
                                "killed, e.g. by kill -9)"
                              : " fell silent without reporting an error (its process or its "
                                "host died, or the host became unreachable)");
    if (!agent.activity.empty()) message += " while running " + agent.activity;
    during_dispatch = during_dispatch || running_dispatch(agent);
  }
  message += "; the other ranks were stopped";
  if (during_dispatch) throw ProgramError(message);
  throw InfraError(message);
}

std::string AgentPool::lost_hosts(const std::vector<int>& ranks) const {
  std::string text;
  std::set<std::string> seen;
  for (int rank : ranks) {
    const AgentInfo& lost = agent(rank);
    if (lost.local || !seen.insert(lost.host).second) continue;
    std::vector<int> on_host;
    bool all = true;
    for (const AgentInfo& agent : agents_) {
      if (agent.host != lost.host) continue;
      on_host.push_back(agent.rank);
      all = all && std::find(ranks.begin(), ranks.end(), agent.rank) != ranks.end();
    }
    if (!all) continue;
    if (!text.empty()) text += "; ";
    text += "host " + lost.host + " (rank" + (on_host.size() > 1 ? "s " : " ") +
            rank_list(on_host) + ") was lost: every rank on it fell silent";
  }
  return text;
}

std::vector<RankStateReport> AgentPool::gather_states(Clock::time_point deadline) {
  std::vector<RankStateReport> states(agents_.size());
  std::vector<bool> asked(agents_.size(), false);
  note_gone_processes();
  for (const AgentInfo& agent : agents_) {
    if (agent.identity.empty() || agent.process_gone) continue;
    try {
      send(agent.rank, wire::StateQuery{});
      asked[static_cast<size_t>(agent.rank)] = true;
    } catch (const std::exception&) {
      // Gone meanwhile: it has no state to give.
    }
  }
  const auto waiting = [&] {
    for (const AgentInfo& agent : agents_) {
      const size_t r = static_cast<size_t>(agent.rank);
      if (asked[r] && !agent.process_gone && !states[r].state) return true;
    }
    return false;
  };
  while (waiting() && Clock::now() < deadline) {
    try {
      while (auto decoded = channel_.receive(milliseconds(0))) {
        const int rank = rank_of(decoded->identity);
        if (rank < 0) continue;
        agents_[static_cast<size_t>(rank)].last_heard = Clock::now();
        if (auto* state = std::get_if<wire::RankState>(&decoded->message))
          states[static_cast<size_t>(rank)].state = std::move(*state);
      }
    } catch (const std::exception& e) {
      // A garbled message or a lost peer: the others' states still count.
      log::debug("while gathering the ranks' states: {}", e.what());
    }
    note_gone_processes();
    if (!waiting()) break;
    // The ROUTER only: a job that has ended keeps its pidfd readable, which would spin.
    const auto left = duration_cast<milliseconds>(deadline - Clock::now()).count();
    try {
      channel_.wait({}, milliseconds(std::clamp<long>(left + 1, 1, 100)));
    } catch (const std::exception& e) {
      log::debug("while gathering the ranks' states: {}", e.what());  // gather_states never throws
    }
  }
  for (const AgentInfo& agent : agents_)
    states[static_cast<size_t>(agent.rank)].gone = agent.process_gone;
  return states;
}

bool AgentPool::wait_local_agents_gone(Clock::time_point deadline) {
  for (const AgentInfo& agent : agents_)
    if (agent.identity.empty() || !agent.local || agent.pidfd < 0) return false;
  for (;;) {
    note_gone_processes();
    std::vector<zmq_pollitem_t> items;
    for (const AgentInfo& agent : agents_)
      if (!agent.process_gone) items.push_back({nullptr, agent.pidfd, ZMQ_POLLIN, 0});
    if (items.empty()) return true;
    const auto left = duration_cast<milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    zmq_poll(items.data(), static_cast<int>(items.size()), std::clamp<long>(left, 1, 100));
  }
}

void AgentPool::abort_all(const std::string& reason) {
  for (AgentInfo& agent : agents_) {
    if (agent.identity.empty() || agent.process_gone) continue;
    try {
      send(agent.rank, wire::Abort{reason});
    } catch (const std::exception&) {
      // Gone already; stopping the job takes care of it.
    }
  }
}

void AgentPool::shutdown_all(milliseconds linger) {
  try {
    channel_.socket().set(zmq::sockopt::linger, static_cast<int>(linger.count()));
  } catch (const zmq::error_t& e) {
    log::debug("cannot set the control socket's linger: {}", e.what());
  }
  for (AgentInfo& agent : agents_) {
    if (agent.identity.empty() || agent.process_gone) continue;
    try {
      send(agent.rank, wire::Shutdown{});
    } catch (const std::exception& e) {
      log::debug("SHUTDOWN to {} failed: {}", describe(agent.rank), e.what());
    }
  }
}

}  // namespace pypto::coord
