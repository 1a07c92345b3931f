// The rank agents of one run as the coordinator sees them (docs/protocol.md): the
// ROUTER they connect to, who is connected, liveness, and — when something
// goes wrong — which rank is to blame.
//
// Everything happens on the caller's thread inside next(): it sleeps in
// poll(2) on the ROUTER, the interrupt pipe and a pidfd per local agent, so
// a dead agent, Ctrl-C or a message wakes it at once, and it never spins.
// While it waits it sends heartbeats and checks the agents' deadlines. Any
// failure is thrown from next() as an Error whose class decides the exit code;
// the caller then aborts the run (abort_all) and stops the job.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "common/pause_log.h"
#include "common/wire/channel.h"
#include "common/wire/curve.h"
#include "common/wire/protocol.h"
#include "coordinator/stall_diagnosis.h"
#include "launch/mpirun_notice.h"
#include "pypto/error.h"

namespace pypto::coord {

using Clock = std::chrono::steady_clock;

struct AgentPoolOptions {
  int world = 1;
  // ROUTER address; "tcp://127.0.0.1:*" takes an ephemeral loopback port.
  std::string bind = "tcp://127.0.0.1:*";
  // For a wildcard bind: the address agents are told to connect to
  // (launch/reachable_address.h); empty: this host's name.
  std::string advertise_host;
  std::string run_id;
  std::chrono::milliseconds heartbeat_interval{1000};
  // Silence longer than this means the peer is gone (both directions).
  std::chrono::milliseconds heartbeat_timeout{10000};
};

struct AgentInfo {
  int rank = -1;
  std::string identity;  // ZeroMQ routing id
  // The routing id of its worker thread's data connection once it said ATTACH with
  // `attach_token` (docs/protocol.md); empty before, and work goes to `identity`.
  std::string data_identity;
  uint64_t attach_token = 0;
  std::string host;
  int64_t pid = 0;
  std::string mpi_thread_level;
  std::vector<std::string> held_hashes;
  bool local = false;  // on this host: its process is watched through a pidfd
  int pidfd = -1;
  Clock::time_point last_heard{};
  Clock::time_point last_sent{};
  bool process_gone = false;
  // AGENT_ERROR with exit_code >= 128: stopped by a signal from outside (mpirun
  // tearing the job down), a consequence of another failure.
  std::optional<std::string> stopped_by_signal;
  // What it is doing, for messages ("dispatch d1 of chip_orch"); empty when idle.
  std::string activity;
  // Its host's CLOCK_MONOTONIC minus the coordinator's, from the CLOCK_PROBE
  // round trip with the shortest time (measure_clocks); rtt 0 when unmeasured.
  int64_t clock_offset_ns = 0;
  bool same_kernel = false;  // its HELLO's boot id is the coordinator's: one clock
  int64_t clock_rtt_ns = 0;
};

// Raises an error an agent reported: its message, prefixed with `who` ("rank 3")
// unless it names its rank already; FailError for exit code 1 (the program is
// wrong), InfraError otherwise.
template <class FailError>
[[noreturn]] void throw_agent_error(const std::string& who, std::string message,
                                    int32_t exit_code) {
  if (message.rfind("rank ", 0) != 0) message = who + ": " + message;
  if (exit_code == static_cast<int32_t>(ExitCode::kFail)) throw FailError(message);
  throw InfraError(message);
}

class AgentPool {
 public:
  AgentPool(zmq::context_t& context, AgentPoolOptions options);
  ~AgentPool();
  AgentPool(const AgentPool&) = delete;
  AgentPool& operator=(const AgentPool&) = delete;

  int world() const { return options_.world; }
  const std::string& run_id() const { return options_.run_id; }
  // The bound address (ephemeral port resolved).
  std::string endpoint() const { return channel_.endpoint(); }
  // The address agents connect to: endpoint() with a wildcard host replaced by this
  // host's name.
  std::string connect_endpoint() const;
  // PYPTO_RUN_KEY for this run's agents (common/wire/curve.h): the ROUTER is a CURVE
  // server that accepts only that key. Goes into mpirun's environment, never an argv.
  std::string agent_key_text() const { return keys_.agent_key_text(); }
  // Connections refused so far (no key, a wrong key, garbage on the port).
  uint64_t refused_connections() const { return authenticator_->refused(); }

  // How the agents' job (mpirun) ended: "mpirun (pid 12) exited with code 1", and
  // whether a signal killed mpirun itself (then mpirun is to blame, not its ranks).
  struct JobEnd {
    std::string what;
    bool killed = false;
    // mpirun's exit code (-1 when killed): 128 + N says a rank was killed by signal N.
    int code = -1;
  };
  // Called on every wake-up of next(): returns how the agents' job ended once it has,
  // which fails the run unless every agent has finished.
  // `session`: the job's session id; a local HELLO whose pid is not in it is refused.
  // `notice`: what mpirun said about the first rank that ended abnormally, once it has
  // (launch/mpirun_notice.h); while the run starts it ends the run at once, naming the
  // rank, even when mpirun itself then hangs.
  void watch_job(std::function<std::optional<JobEnd>()> poll, int pidfd = -1,
                 int64_t session = -1,
                 std::function<std::optional<launch::RankEnded>()> notice = {});

  // Waits until every rank of the world said HELLO and was welcomed. A peer of another
  // protocol version, of another world size, or a second agent claiming a rank is
  // refused (REFUSE) and fails the run (InfraError naming both sides). At `deadline`
  // throws InfraError naming the ranks that never connected and `hint`.
  void accept_all(Clock::time_point deadline, const std::string& hint);
  // After accept_all: `rounds` CLOCK_PROBEs to every agent, one round at a
  // time; each agent keeps the offset of its fastest round trip. Agents that
  // have not answered by `deadline` keep what they have (and a warning says so).
  void measure_clocks(int rounds, Clock::time_point deadline);

  void send(int rank, const wire::Message& message, std::vector<zmq::message_t> payloads = {},
            uint64_t request_id = 0);
  // RESET, DISPATCH and RESIDENT: to the rank's data connection once it has one (its
  // worker thread reads them there), else like send(). Its answer arrives from the same
  // connection; next() reports it as the rank's like any other.
  void send_work(int rank, const wire::Message& message,
                 std::vector<zmq::message_t> payloads = {}, uint64_t request_id = 0);

  struct Incoming {
    int rank = -1;
    wire::Decoded decoded;
  };
  // The next message of an agent other than HEARTBEAT, or nullopt at `deadline`
  // (a deadline already past still sends the heartbeats due and checks deadlines).
  // Throws: InterruptedError (Ctrl-C), the agent's error for AGENT_ERROR, and for a
  // lost agent (its process ended, the job ended, or it was silent past the heartbeat
  // timeout) an error naming the rank — ProgramError when it was running a dispatch,
  // InfraError otherwise.
  std::optional<Incoming> next(Clock::time_point deadline);

  // After a failure, before abort_all: asks every live agent what it is doing
  // (STATE_QUERY) and collects the RANK_STATEs that arrive by `deadline`; other
  // messages are dropped. Never throws. Indexed by rank.
  std::vector<RankStateReport> gather_states(Clock::time_point deadline);

  // Best effort, never throws: ABORT to every agent whose process is not known gone.
  void abort_all(const std::string& reason);
  // After abort_all: waits until the process of every agent is known to have ended
  // (all on this host, watched through pidfds) or `deadline`; true when they have.
  // False at once when some agent is remote or never connected. Never throws.
  bool wait_local_agents_gone(Clock::time_point deadline);

  // SHUTDOWN to every agent; never throws. The ROUTER then lingers up to
  // `linger` when it closes, so a loaded host still sends the SHUTDOWNs to live
  // agents before the process exits (external agents have no job to wait for).
  void shutdown_all(std::chrono::milliseconds linger = std::chrono::seconds(5));

  const AgentInfo& agent(int rank) const { return agents_.at(static_cast<size_t>(rank)); }
  void set_activity(int rank, std::string activity);

 private:
  // What the ROUTER holds, without waiting; a peer of another version is refused and
  // fails the run (InfraError), as does any malformed message (ProtocolError). ATTACHes
  // are handled here, whatever the caller waits for.
  std::optional<wire::Decoded> receive_now();
  void handle_hello(wire::Decoded& decoded);
  // An ATTACH: a welcomed agent's worker thread names its data connection.
  void handle_attach(const wire::Decoded& decoded);
  // Why a HELLO's claimed identity is not believable (empty: it is): a local pid that is
  // not a live pypto-rank of the job, or already another rank's, or of another MPI rank.
  std::string identity_problem(const wire::Hello& hello) const;
  // A peer that has not been welcomed did something wrong: refused (when it said HELLO),
  // logged (rate-limited) and forgotten; the run goes on.
  void drop_peer(const std::string& identity, const std::string& why,
                 std::optional<uint32_t> agent_version = std::nullopt);
  void refuse(const std::string& identity, const wire::Refuse& refusal);
  int rank_of(const std::string& identity) const;
  void send_heartbeats(Clock::time_point now);
  void check_silence(Clock::time_point now);
  void check_interrupt() const;
  // Polls the ROUTER, the interrupt pipe and the pidfds until one is ready or `until`.
  void wait_readable(Clock::time_point until);
  // Marks the local agents whose process has ended; true when the job's exit fd is
  // readable (or there is none), i.e. when the job itself may have ended.
  bool note_gone_processes();
  // Something died: collect a little longer, then throw naming the rank to blame.
  // `launcher_killed`: the trigger is mpirun killed by a signal; the ranks it leaves
  // behind are its victims, not culprits.
  [[noreturn]] void fail_lost(const std::string& trigger, bool launcher_killed = false);
  std::string describe(int rank) const;
  // "host H (ranks 4-7) was lost: ..." for each other host all of whose ranks are
  // among `ranks`; empty when there is none.
  std::string lost_hosts(const std::vector<int>& ranks) const;

  AgentPoolOptions options_;
  // Ticked by each turn of next(): a freeze of this host is not the agents' silence.
  PauseLog pauses_;
  wire::RunKeys keys_;
  // Before channel_: the ZAP handler must exist when the ROUTER binds.
  std::unique_ptr<wire::CurveAuthenticator> authenticator_;
  wire::Channel channel_;
  wire::RateLimitedLog dropped_log_;
  int64_t job_session_ = -1;
  std::vector<AgentInfo> agents_;
  std::map<std::string, int> rank_by_identity_;
  int connected_ = 0;
  std::function<std::optional<JobEnd>()> job_poll_;
  std::function<std::optional<launch::RankEnded>()> job_notice_;
  int job_pidfd_ = -1;
  // next() looks at the processes when a wait saw a pidfd ready, or every 50 ms.
  bool liveness_due_ = true;
  Clock::time_point last_liveness_check_{};
  std::string hostname_;
  std::string boot_id_;  // this kernel's (common/boot_id.h): agents reporting it share our clock
};

}  // namespace pypto::coord
