// DistributedWorker: the execute layer's handle on a set of rank agents
// (docs/architecture.md, docs/protocol.md). prepare() gets the agents — launching `mpirun -n <world>
// pypto-rank` itself, or waiting for agents someone else launched — ships each
// rank its next_levels/<r>/ of every registered program, has them assemble
// their kernels and create the programs' windows; then any number of run()s or
// submit()s dispatch without relaunching. close() (or the destructor) shuts
// the agents down in order.
//
// A failure anywhere (a kernel error on one rank, a dead agent, a wait that
// expired, Ctrl-C) aborts every agent and stops the job; the worker is then
// unusable and every later call throws that first error again.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "pypto/distributed_compiled_program.h"
#include "pypto/mpirun_options.h"
#include "pypto/phase_timing.h"
#include "pypto/run_config.h"
#include "pypto/tensor.h"

namespace pypto {

namespace fs = std::filesystem;

enum class AgentMode {
  kEmbedded,  // prepare() runs mpirun itself, in its own process group
  kExternal,  // agents launched elsewhere connect to `bind`
};

struct DistributedWorkerOptions {
  AgentMode agents = AgentMode::kEmbedded;
  // The ROUTER address. Embedded default: an ephemeral loopback port (a wildcard
  // address when a hostfile spreads the ranks over hosts). External: required.
  std::optional<std::string> bind;
  // Embedded: how to run mpirun (world and endpoint are filled in by prepare()).
  launch::MpirunOptions mpirun;
  // Until every agent has said HELLO.
  std::chrono::milliseconds startup_timeout{std::chrono::seconds(120)};
  std::chrono::milliseconds heartbeat_interval{std::chrono::milliseconds(500)};
  std::chrono::milliseconds heartbeat_timeout{std::chrono::seconds(10)};
  // Until every agent is READY (materialize + assemble + windows). Embedded agents get
  // it as well and stop a compile that runs into it, naming the source.
  std::chrono::milliseconds prepare_timeout{std::chrono::minutes(5)};
  // A progress line on stderr while the agents connect and prepare (only when
  // stderr is a terminal; pypto-coord turns it on).
  bool progress = false;
};

// One rank's side of prepare().
struct RankPrepareStats {
  int rank = 0;
  std::string host;
  uint64_t files = 0;            // in its manifests
  uint64_t bytes_shipped = 0;    // file bytes sent to it
  uint64_t blobs_shipped = 0;
  uint64_t cache_hits = 0;       // binaries found in its host's store
  uint64_t compiles = 0;
  // Its host's CLOCK_MONOTONIC minus the coordinator's, measured at HELLO
  // (the fastest of a few round trips, whose time is clock_rtt_ns).
  int64_t clock_offset_ns = 0;
  int64_t clock_rtt_ns = 0;
};

// The ranks of one host, added up: what crossed the coordinator link to it.
struct HostPrepareStats {
  std::string host;
  std::vector<int> ranks;
  uint64_t bytes_shipped = 0;
  uint64_t blobs_shipped = 0;
  uint64_t cache_hits = 0;
  uint64_t compiles = 0;
  int64_t clock_offset_ns = 0;  // of the rank measured with the fastest round trip
  int64_t clock_rtt_ns = 0;
};

struct PrepareReport {
  double launch_ms = 0;    // until every agent said HELLO
  double prepare_ms = 0;   // manifests, blobs, assembly, windows
  std::vector<RankPrepareStats> ranks;
  uint64_t bytes_shipped() const;
  // One entry per host, in order of its lowest rank.
  std::vector<HostPrepareStats> hosts() const;
};

struct DistributedRunOptions {
  RunConfig config;  // platform ignored (the build's); DFX switches, rings, device id
  std::optional<std::chrono::milliseconds> dispatch_timeout;  // each dispatch on its rank
  std::optional<std::chrono::milliseconds> wait_timeout;      // a kernel's wait()
  // Zero the program's windows before the run (collective). Off: windows keep what
  // the previous run left in them (persistent).
  bool reset_windows = true;
  // NAME=VALUE (as --scalar): values of the program's scalar parameters
  // instead of the defaults its build records.
  std::vector<std::string> scalars;
};

// One dispatch of one rank, as it came back.
struct DispatchOutcome {
  int rank = 0;
  uint64_t index = 0;  // k: the rank's k-th dispatch of this run
  std::string program;
  std::string next_level;  // "next_levels/<r>"
  std::string host;
  int64_t start_unix_ns = 0;
  int64_t end_unix_ns = 0;
  std::vector<PhaseTiming> timings;
  // DFX files: path relative to the dispatch's directory, content.
  std::vector<std::pair<std::string, std::string>> dfx_files;
};

struct DistributedRunResult {
  double wall_ms = 0;
  std::vector<DispatchOutcome> dispatches;  // by rank, then k
};

class DistributedWorker;

// How a resident tensor is spread over the ranks (docs/resident-tensors.md).
enum class ResidentLayout {
  kStacked,     // shape [world, ...]: rank r holds [r] (alloc_stacked_tensor)
  kReplicated,  // every rank holds a copy of the whole (alloc_tensor); dispatches only read it
};

// A tensor that lives in the agents across runs, until freed or the worker ends:
// a handle (copies share it), made by DistributedWorker::alloc_stacked_tensor or
// alloc_tensor. Bound to a host parameter of a run, it is neither shipped to the
// ranks nor returned: each rank's kernels read and write its part in place.
class ResidentTensor {
 public:
  ResidentTensor() = default;
  DType dtype() const;
  const Shape& shape() const;  // as a host parameter sees it
  ResidentLayout layout() const;
  uint64_t id() const;
  bool freed() const;
  bool valid() const { return state_ != nullptr; }
  std::string describe() const;  // "resident f32[8, 1024] (stacked, id 3)"

 private:
  friend class DistributedWorker;
  struct State;
  const State& state() const;  // throws UsageError when empty
  std::shared_ptr<State> state_;
};

// One argument of a run: a host tensor (shipped for the run) or a resident tensor.
using RunArgument = std::variant<Tensor, ResidentTensor>;

// Why host parameter `param` of `program` cannot be bound to a resident tensor of
// `layout` (a stacked one must be used by rank r only in its row [r], a replicated
// one only read), or nullopt when it can.
std::optional<std::string> resident_binding_problem(const DistributedCompiledProgram& program,
                                                    const ParamInfo& param, ResidentLayout layout);

// A submitted run. Holds the host arguments until it completes; wait() returns when
// it has (pumping the worker), then args() hold the outputs.
class RunHandle {
 public:
  RunHandle() = default;
  DistributedRunResult wait();
  bool done() const;
  std::vector<Tensor>& args();

 private:
  friend class DistributedWorker;
  struct State;
  DistributedWorker* worker_ = nullptr;
  std::shared_ptr<State> state_;
};

class DistributedWorker {
 public:
  // Launches (or waits for) the agents and prepares `program` and every program of
  // `extra_compiled` (same world size). Throws InfraError (launch, shipping),
  // KernelCompileError-class errors (exit 1) for a kernel that does not compile,
  // InterruptedError on Ctrl-C; nothing is left running when it throws.
  static std::unique_ptr<DistributedWorker> prepare(
      const DistributedCompiledProgram& program, const DistributedWorkerOptions& options = {},
      const std::vector<const DistributedCompiledProgram*>& extra_compiled = {});

  ~DistributedWorker();
  DistributedWorker(const DistributedWorker&) = delete;
  DistributedWorker& operator=(const DistributedWorker&) = delete;

  // Runs every dispatch of `program`'s host plan once: in order per rank, ranks
  // concurrently. `host_args` holds one tensor per host parameter (in order, declared
  // dtype and shape); Out/InOut parameters are written in place.
  DistributedRunResult run(const DistributedCompiledProgram& program,
                           std::vector<Tensor>& host_args, const DistributedRunOptions& options = {});

  // Queues a run and returns at once, unless two runs are already in flight: then it
  // first waits for the oldest. Runs complete in submission order.
  RunHandle submit(const DistributedCompiledProgram& program, std::vector<Tensor> host_args,
                   const DistributedRunOptions& options = {});

  // The same with some parameters bound to resident tensors (docs/resident-tensors.md).
  // A resident tensor must be this worker's, not freed, of the parameter's dtype and
  // shape; a stacked one must be used by each rank's dispatches only in its own part
  // [r], a replicated one only read. Violations throw UsageError before anything runs.
  DistributedRunResult run(const DistributedCompiledProgram& program,
                           std::vector<RunArgument>& args, const DistributedRunOptions& options = {});
  RunHandle submit(const DistributedCompiledProgram& program, std::vector<RunArgument> args,
                   const DistributedRunOptions& options = {});

  // Resident tensors: allocated zero-filled on the ranks, filled with copy_to, read
  // back with copy_from (each waits for the runs submitted before it), freed with
  // free() or when the worker closes or fails. Throw UsageError on a freed tensor or
  // one of another worker, and on a host tensor of another dtype or shape.
  ResidentTensor alloc_stacked_tensor(DType dtype, const Shape& part_shape);
  ResidentTensor alloc_tensor(DType dtype, const Shape& shape);
  void copy_to(const ResidentTensor& dst, const Tensor& src);
  void copy_from(const ResidentTensor& src, Tensor& dst);
  void free(ResidentTensor& tensor);

  // Waits for every submitted run, then shuts the agents down and reaps the job.
  // Idempotent; the destructor calls it (and never throws).
  //
  // Between calls a background thread keeps the agents' connection alive
  // (heartbeats, deadlines) and completes submitted runs, so a prepared worker may
  // sit idle for as long as the caller likes. The methods may be called from any
  // one thread at a time.
  void close();

  const PrepareReport& prepare_report() const { return prepare_report_; }
  int world() const { return world_; }
  static constexpr int kMaxInFlight = 2;

 private:
  friend class RunHandle;
  struct Impl;
  struct Build;
  struct WorkItem;

  DistributedWorker();
  void start_agents(const DistributedWorkerOptions& options, int64_t world);
  void prepare_builds(const std::vector<const DistributedCompiledProgram*>& programs,
                      std::chrono::milliseconds timeout, bool progress);
  const Build& build_of(const DistributedCompiledProgram& program) const;
  RunHandle submit_locked(const DistributedCompiledProgram& program, std::vector<RunArgument> args,
                          const DistributedRunOptions& options);
  void check_resident(const ResidentTensor& tensor, const char* operation) const;
  ResidentTensor alloc_resident(DType dtype, const Shape& shape, ResidentLayout layout);
  // Queues one RESIDENT per rank that holds a part and waits for their answers.
  void resident_op(const ResidentTensor& tensor, uint8_t op, const Tensor* src, Tensor* dst);
  // Sends what can be sent and handles one incoming message; false at `deadline`.
  bool pump(std::chrono::steady_clock::time_point deadline);
  void pump_until_done(const RunHandle::State& state);
  void feed(int rank);
  void start_keepalive(std::chrono::milliseconds interval);
  void stop_keepalive();
  // Stops everything after `error`; returns the run's failure from now on (the
  // first one, or a diagnosis of it), for the caller to rethrow.
  std::exception_ptr fail(const std::exception& error);
  // The first failure explained from every rank's state, or nullptr.
  std::exception_ptr diagnose(const std::exception& error);
  void check_alive() const;

  std::unique_ptr<Impl> impl_;
  PrepareReport prepare_report_;
  int world_ = 0;
};

// Runs `program` once, as PyPTO's distributed program call: launches the
// agents (mpirun -n <world> pypto-rank), runs every dispatch, gathers Out
// params into `args` (one tensor per host parameter) and shuts the agents
// down. `config` sets the DFX switches, rings and device id (its platform must
// be of the build's architecture). Prepare a DistributedWorker yourself to run
// many times without relaunching.
void call(const DistributedCompiledProgram& program, std::vector<Tensor>& args,
          const std::optional<RunConfig>& config = std::nullopt);

}  // namespace pypto
