// pypto-rank: one rank agent of an L3 run (docs/protocol.md
// "Sequence"). The control thread (the caller of run()) owns the DEALER to
// the coordinator: it says HELLO, waits for WELCOME, answers MANIFEST with
// NEED, hands BLOBS / SHUTDOWN (and RESET / DISPATCH / RESIDENT that come
// before the worker's data connection is attached) to the worker thread in
// arrival order, sends what the worker produces, heartbeats, and watches the
// coordinator's silence. It sleeps in poll(2) on the socket and an eventfd
// (worker results, signals): nothing busy-polls.
#pragma once

#include <chrono>
#include <deque>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "common/wire/blob_store.h"
#include "common/wire/channel.h"
#include "rank_agent/agent_options.h"
#include "rank_agent/agent_worker.h"

namespace pypto::rank {

class RankAgent {
 public:
  explicit RankAgent(AgentOptions options);
  ~RankAgent();
  RankAgent(const RankAgent&) = delete;
  RankAgent& operator=(const RankAgent&) = delete;

  // Runs the agent to its end and returns the exit code of a clean SHUTDOWN
  // (0). Every other end — REFUSE, no coordinator, ABORT, lost coordinator,
  // a signal, a failure outside a dispatch — prints why and leaves the
  // process at once with _exit (3, 1, 3, 128+N, 1/3): kernels may be blocked
  // on a dead rank, so no thread is joined and no collective is attempted.
  int run();

 private:
  using Clock = std::chrono::steady_clock;

  void start_mpi();
  void say_hello();
  void await_welcome();
  int control_loop();
  void handle(wire::Decoded& message);
  void send(const wire::Message& message, std::vector<zmq::message_t> payloads = {},
            uint64_t request_id = 0);
  void wait_for_activity(Clock::duration timeout);
  void drain_wakeups();
  void check_signal();
  // Sends what the worker produced; returns an exit code once SHUTDOWN is done.
  std::optional<int> flush_worker_outputs();
  int finish_shutdown(bool clean);
  void remove_workspace();
  // Best effort: tell the coordinator, then _exit(code).
  [[noreturn]] void fail_now(int code, const std::string& message, bool tell_coordinator);
  [[noreturn]] void exit_now(int code);

  AgentOptions options_;
  int wake_fd_ = -1;
  std::unique_ptr<AgentWorker> worker_;
  SessionInfo session_;
  std::optional<wire::BlobStore> blob_store_;
  AgentPaths paths_;
  fs::path workspace_;  // <workspace parent>/rank<r>
  zmq::context_t context_;
  std::optional<wire::Channel> channel_;
  // The run's CURVE key (common/wire/curve.h), read and removed from the environment
  // before MPI starts threads, so kernels and compilers never inherit it; or why not.
  std::optional<wire::AgentKey> run_key_;
  std::exception_ptr run_key_error_;
  bool welcomed_ = false;
  wire::Welcome welcome_;
  std::deque<wire::Manifest> pending_manifests_;  // MANIFESTs awaiting their BLOBS
  bool shutting_down_ = false;
  Clock::time_point last_sent_;
  Clock::time_point last_heard_;
};

// The whole command: parses argv, runs the agent, maps errors to exit codes.
int pypto_rank_main(int argc, char** argv);

}  // namespace pypto::rank
