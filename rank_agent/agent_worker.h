// The rank agent's worker thread (docs/protocol.md, "Work happens off the
// control thread"): it owns MPI — init, the node barrier, window sets, every
// collective, finalize — and does the slow work: storing shipped blobs,
// materializing and assembling builds, resetting windows and running
// dispatches on the chip worker. The control thread hands it jobs in the
// order the coordinator sent them and sends whatever it puts in the outbox.
// Once configured with a data connection (docs/protocol.md, "The data
// connection"), the worker also reads RESET, DISPATCH and RESIDENT from a
// DEALER socket of its own and answers them there, so a dispatch wakes no
// other thread of the agent; that socket is the worker thread's alone.
#pragma once

#include <chrono>
#include <deque>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>
#include <zmq.hpp>

#include "common/wire/channel.h"
#include "common/wire/protocol.h"
#include "pypto/tensor.h"
#include "rank_agent/rank_activity.h"

namespace pypto {
class ChipWorker;
}

namespace pypto::rank {

namespace fs = std::filesystem;

class MpiSession;
class WindowSet;

// What the control thread learns of MPI before it says HELLO.
struct SessionInfo {
  int rank = 0;
  int world = 1;
  std::string host;
  std::string thread_level;  // "MPI_THREAD_MULTIPLE", ...
  bool thread_multiple = true;
  std::string thread_note;
};

// The worker's own connection to the coordinator (docs/protocol.md, "The data connection").
struct DataConnection {
  std::string endpoint;          // the coordinator's, as the control connection's
  wire::ChannelOptions options;  // the run's CURVE key
  uint64_t token = 0;            // WELCOME's attach_token, sent back in ATTACH
};

// Fixed once WELCOME has named the run.
struct WorkerSettings {
  fs::path blob_store;
  fs::path binary_store;
  fs::path workspace;  // this rank's: <workspace>/<build>/ per build
  std::chrono::milliseconds wait_timeout{60'000};
  // Deadline of the node barrier before materializing: long, because a rank
  // of the node may still be compiling an earlier build.
  std::chrono::milliseconds node_barrier_timeout{600'000};
  // Unset: every job comes from the control thread and every answer goes back through it.
  std::optional<DataConnection> data;
};

// Jobs, one per coordinator request; each echoes its request id.
struct PrepareJob {  // MANIFEST + its BLOBS
  uint64_t request_id = 0;
  wire::Manifest manifest;
  std::vector<std::string> hashes;
  std::vector<zmq::message_t> blobs;  // one per hash
};
struct ResetJob {
  uint64_t request_id = 0;
  std::string build;
};
struct DispatchJob {
  uint64_t request_id = 0;
  wire::Dispatch dispatch;
  std::vector<zmq::message_t> payloads;  // In/InOut tensors, in argument order
};
struct ResidentJob {
  uint64_t request_id = 0;
  wire::Resident op;
  std::vector<zmq::message_t> payloads;  // a write's bytes
};
struct ShutdownJob {};
struct ConfigureJob {  // the first job: WELCOME has named the run
  WorkerSettings settings;
};
using WorkerJob =
    std::variant<PrepareJob, ResetJob, DispatchJob, ResidentJob, ShutdownJob, ConfigureJob>;

// The job a RESET, DISPATCH or RESIDENT asks for (its payloads move into it);
// nullopt for any other message. Whichever connection it came on.
std::optional<WorkerJob> work_job_of(wire::Decoded& message);

// What the worker hands back to the control thread.
struct WorkerOutput {
  enum class Kind {
    kSend,          // send `message` (+ payloads) with `request_id`
    kFatal,         // send `message` (an AGENT_ERROR), then exit with `exit_code`
    kShutdownDone,  // SHUTDOWN handled; `clean` says whether MPI was finalized
  };
  Kind kind = Kind::kSend;
  std::optional<wire::Message> message;
  std::vector<zmq::message_t> payloads;
  uint64_t request_id = 0;
  int exit_code = 0;
  bool clean = true;
};

class AgentWorker {
 public:
  // `notify` is called on the worker thread whenever the outbox gains an
  // entry (and when the MPI session is up); it must only wake the control thread.
  explicit AgentWorker(std::function<void()> notify);
  // Joins the thread; call only after kShutdownDone (other exits are _exit).
  ~AgentWorker();
  AgentWorker(const AgentWorker&) = delete;
  AgentWorker& operator=(const AgentWorker&) = delete;

  // Starts the thread, which initializes MPI first.
  void start();
  // Blocks until MPI is initialized; rethrows its failure.
  SessionInfo wait_for_session();
  // Before the first job; with settings.data the worker connects and says ATTACH.
  void configure(WorkerSettings settings);
  void submit(WorkerJob job);
  std::vector<WorkerOutput> take_outputs();
  // What the worker is doing; readable from any thread (STATE_QUERY).
  const RankActivity& activity() const { return activity_; }

 private:
  struct Build;
  // A resident tensor's part on this rank. Bound whole to an in-place argument
  // it moves into that window and stays there (`data` is then a view of the
  // window's bytes and the build's `occupants` names it), so later runs copy it
  // neither in nor out; it moves back to a buffer of its own before anything
  // else uses the window.
  struct ResidentPart {
    Tensor data;
    std::string build;  // where it lives when in a window
    int64_t window = -1;
  };

  void main();
  // The next job, from the control thread or the data connection; sleeps until there is one.
  WorkerJob next_job();
  void apply(ConfigureJob& job);
  // Answers on the data connection when there is one, else through the control thread.
  void post(WorkerOutput output);
  void prepare(PrepareJob& job);
  void reset(const ResetJob& job);
  // Zeroes `build`'s windows (collective), keeping the resident tensors that
  // live in them: a RESET, or a DISPATCH's reset_windows.
  void zero_windows(Build& build);
  void dispatch(DispatchJob& job);
  void resident(ResidentJob& job);
  // The box a kResident dispatch argument names, a view of the part this agent holds.
  Tensor resident_box(const wire::DispatchArg& arg, const std::string& where) const;
  // Moves the resident part living in `window` of `build` (if any) back into a
  // buffer of its own, so the window can hold something else.
  void evict(Build& build, int64_t window);
  // Whether a kResident argument binds all of an existing part, contiguous.
  bool whole_part(const wire::DispatchArg& arg) const;
  void evict_all(Build& build);
  bool shutdown();
  void node_barrier();
  std::string where() const;

  std::function<void()> notify_;
  std::thread thread_;
  std::promise<SessionInfo> session_promise_;
  std::future<SessionInfo> session_future_;

  std::mutex mu_;
  std::deque<WorkerJob> jobs_;
  std::vector<WorkerOutput> outputs_;
  int jobs_fd_ = -1;  // eventfd: jobs_ gained an entry

  // Worker thread only: the data connection (its context is its own, so that the
  // control thread's _exit paths, which close theirs, never wait on this socket).
  std::optional<zmq::context_t> data_context_;
  std::optional<wire::Channel> data_;

  // Worker thread only.
  WorkerSettings settings_;
  std::unique_ptr<MpiSession> session_;
  std::map<std::string, std::unique_ptr<Build>> builds_;
  std::vector<std::string> build_order_;  // creation order of window sets: teardown order
  std::unique_ptr<ChipWorker> chip_;
  // The current dispatch, its tasks and its comm calls (comm_ops.json with --swimlane).
  RankActivity activity_;
  // Resident tensors (docs/resident-tensors.md): this rank's parts, by id; they
  // live until FREE or the end of the job.
  std::map<uint64_t, ResidentPart> residents_;
  // An earlier step failed: peers may not be able to join a collective
  // teardown, so SHUTDOWN skips it.
  bool dirty_ = false;
};

}  // namespace pypto::rank
