#include "coordinator/distributed_worker.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <chrono>
#include <exception>
#include <iostream>
#include <map>
#include <random>
#include <set>

#include "artifact/kernel_config.h"
#include "common/error.h"
#include "common/fs_util.h"
#include "common/log.h"
#include "common/subprocess.h"
#include "common/wire/manifest.h"
#include "coordinator/agent_pool.h"
#include "coordinator/interrupt.h"
#include "launch/hostfile.h"
#include "launch/job.h"
#include "launch/reachable_address.h"
#include "orchestration/chip_worker.h"

namespace pypto {

using coord::AgentPool;
using coord::Clock;
using std::chrono::milliseconds;

namespace {

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::string make_run_id() {
  std::random_device random;
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  char text[64];
  std::snprintf(text, sizeof(text), "run-%lld-%08x",
                static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(now).count()),
                random());
  return text;
}

// A slack on top of the agent's own dispatch deadline: the agent fails a dispatch that
// overruns and says so; this only catches an agent that cannot even do that.
constexpr milliseconds kDispatchSlack{std::chrono::seconds(60)};
constexpr milliseconds kDefaultDispatchTimeout{std::chrono::minutes(10)};
constexpr milliseconds kShutdownGrace{std::chrono::seconds(15)};
constexpr milliseconds kStopGrace{std::chrono::seconds(2)};
// Clock probes at startup: a few round trips, bounded so a slow host delays little.
constexpr int kClockRounds = 5;
constexpr milliseconds kClockProbeTime{std::chrono::seconds(3)};

zmq::message_t frame_of_tensor(const Tensor& tensor) {
  const Tensor packed = tensor.is_contiguous() ? tensor : tensor.contiguous();
  std::span<const std::byte> bytes = packed.bytes();
  return zmq::message_t(bytes.data(), bytes.size());
}

// The box of a host parameter or intermediate that a dispatch argument names (a
// view sharing the host tensor's buffer); from_dir checked that it exists.
Tensor host_box(const DistributedCompiledProgram& program, const std::vector<Tensor>& args,
                const std::vector<Tensor>& intermediates, const HostArg& arg) {
  const auto& params = program.params();
  for (size_t p = 0; p < params.size(); ++p)
    if (params[p].name == arg.param) return args[p].slice(arg.offsets, arg.shape);
  const auto& temps = program.host_orch().intermediates;
  size_t t = 0;
  while (temps[t].name != arg.param) ++t;
  return intermediates[t].slice(arg.offsets, arg.shape);
}

}  // namespace

std::vector<HostPrepareStats> PrepareReport::hosts() const {
  std::vector<HostPrepareStats> hosts;
  for (const RankPrepareStats& rank : ranks) {
    auto it = std::find_if(hosts.begin(), hosts.end(),
                           [&](const HostPrepareStats& h) { return h.host == rank.host; });
    if (it == hosts.end()) {
      hosts.push_back(HostPrepareStats{rank.host, {}, 0, 0, 0, 0, 0, 0});
      it = hosts.end() - 1;
    }
    it->ranks.push_back(rank.rank);
    it->bytes_shipped += rank.bytes_shipped;
    it->blobs_shipped += rank.blobs_shipped;
    it->cache_hits += rank.cache_hits;
    it->compiles += rank.compiles;
    if (rank.clock_rtt_ns > 0 && (it->clock_rtt_ns == 0 || rank.clock_rtt_ns < it->clock_rtt_ns)) {
      it->clock_rtt_ns = rank.clock_rtt_ns;
      it->clock_offset_ns = rank.clock_offset_ns;
    }
  }
  return hosts;
}

uint64_t PrepareReport::bytes_shipped() const {
  uint64_t total = 0;
  for (const RankPrepareStats& rank : ranks) total += rank.bytes_shipped;
  return total;
}

// A program the agents hold: its id on the wire, its windows, each rank's manifest.
struct DistributedWorker::Build {
  std::string id;
  const DistributedCompiledProgram* program = nullptr;
  std::string dir_key;
  std::vector<wire::WireWindow> windows;
  std::vector<wire::Manifest> manifests;        // by rank
  std::map<std::string, fs::path> file_of_hash;  // where the coordinator reads a blob
};

// One thing a rank must do for a run, in its order.
struct DistributedWorker::WorkItem {
  std::shared_ptr<RunHandle::State> run;
  bool reset = false;  // RESET of the build's windows, else a dispatch
  const Dispatch* dispatch = nullptr;
  uint64_t index = 0;  // k
  uint64_t request_id = 0;
  Clock::time_point deadline{};
};

struct RunHandle::State {
  const DistributedCompiledProgram* program = nullptr;
  const DistributedWorker::Build* build = nullptr;
  std::vector<Tensor> args;
  std::vector<Tensor> intermediates;  // host_orch.json's, zero-filled per run
  DistributedRunOptions options;
  size_t pending = 0;
  bool finished = false;
  Clock::time_point start;
  DistributedRunResult result;
};

struct DistributedWorker::Impl {
  zmq::context_t context{1};
  std::optional<coord::InterruptScope> interrupts;
  std::unique_ptr<AgentPool> pool;
  std::optional<launch::Job> job;
  std::vector<std::unique_ptr<Build>> builds;
  std::vector<std::deque<WorkItem>> queues;          // by rank: not yet sent
  std::vector<std::optional<WorkItem>> outstanding;  // by rank: sent, not answered
  std::deque<std::shared_ptr<RunHandle::State>> in_flight;
  uint64_t next_request_id = 1;
  std::exception_ptr failure;
  bool closed = false;
  // Every use of the pool and the queues holds `mu`: the caller's thread in
  // submit/wait/close, and the keepalive thread, which between calls answers
  // heartbeats, checks the agents' deadlines and completes submitted runs, so
  // that an idle worker is never mistaken for a dead coordinator.
  std::mutex mu;
  std::condition_variable keepalive_wake;
  std::thread keepalive;
  bool stop_keepalive = false;
};

DistributedWorker::DistributedWorker() : impl_(std::make_unique<Impl>()) {}

DistributedWorker::~DistributedWorker() {
  try {
    close();
  } catch (const std::exception& e) {
    log::error("closing the distributed worker: {}", e.what());
  }
}

std::unique_ptr<DistributedWorker> DistributedWorker::prepare(
    const DistributedCompiledProgram& program, const DistributedWorkerOptions& options,
    const std::vector<const DistributedCompiledProgram*>& extra_compiled) {
  std::vector<const DistributedCompiledProgram*> programs{&program};
  for (const DistributedCompiledProgram* extra : extra_compiled) {
    if (extra->world_size() != program.world_size())
      throw UsageError("extra program " + extra->dir().string() + " runs on " +
                       std::to_string(extra->world_size()) + " ranks, but " +
                       program.dir().string() + " on " + std::to_string(program.world_size()) +
                       "; one worker serves one world size");
    programs.push_back(extra);
  }
  std::unique_ptr<DistributedWorker> worker(new DistributedWorker());
  try {
    worker->start_agents(options, program.world_size());
    worker->prepare_builds(programs, options.prepare_timeout);
  } catch (const std::exception& e) {
    worker->fail(e);
    throw;
  }
  worker->start_keepalive(options.heartbeat_interval);
  return worker;
}

void DistributedWorker::start_keepalive(milliseconds interval) {
  impl_->keepalive = std::thread([this, interval] {
    std::unique_lock<std::mutex> lock(impl_->mu);
    while (!impl_->stop_keepalive && !impl_->closed) {
      impl_->keepalive_wake.wait_for(lock, interval);
      if (impl_->stop_keepalive || impl_->closed) break;
      try {
        while (pump(Clock::now())) {
        }
      } catch (const std::exception& e) {
        fail(e);  // every later call rethrows it
      }
    }
  });
}

void DistributedWorker::stop_keepalive() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop_keepalive = true;
  }
  impl_->keepalive_wake.notify_all();
  if (impl_->keepalive.joinable()) impl_->keepalive.join();
}

void DistributedWorker::start_agents(const DistributedWorkerOptions& options, int64_t world) {
  world_ = static_cast<int>(world);
  impl_->interrupts.emplace();
  impl_->queues.resize(static_cast<size_t>(world_));
  impl_->outstanding.resize(static_cast<size_t>(world_));

  coord::AgentPoolOptions pool_options;
  pool_options.world = world_;
  pool_options.run_id = make_run_id();
  pool_options.heartbeat_interval = options.heartbeat_interval;
  pool_options.heartbeat_timeout = options.heartbeat_timeout;
  std::vector<std::string> hosts;  // the hostfile's, when ranks may be on other hosts
  if (options.mpirun.hostfile)
    for (const launch::HostfileEntry& entry : launch::read_hostfile(*options.mpirun.hostfile))
      hosts.push_back(entry.host);
  if (options.bind) {
    pool_options.bind = *options.bind;
    if (launch::endpoint_is_loopback(*options.bind))
      for (const std::string& host : hosts)
        if (!launch::is_local_host(host))
          throw UsageError("--bind " + *options.bind +
                           " is a loopback address, which the ranks on " + host +
                           " (from the hostfile) cannot reach; bind an address of this host "
                           "they can reach, or tcp://0.0.0.0:PORT");
  } else if (options.agents == AgentMode::kExternal) {
    throw UsageError("--agents external needs --bind tcp://ADDR:PORT for the agents to reach");
  } else if (!hosts.empty()) {
    pool_options.bind = "tcp://0.0.0.0:*";  // ranks on other hosts must reach it
  }
  // A wildcard is no address to connect to: advertise one the other hosts can
  // reach (not 127.0.0.1, not a name that may only resolve here).
  if (launch::endpoint_is_wildcard(pool_options.bind))
    pool_options.advertise_host = launch::reachable_address(hosts);
  const auto start = Clock::now();
  impl_->pool = std::make_unique<AgentPool>(impl_->context, pool_options);
  const std::string endpoint = impl_->pool->connect_endpoint();

  std::string hint;
  if (options.agents == AgentMode::kEmbedded) {
    launch::MpirunOptions mpirun = options.mpirun;
    mpirun.world = world_;
    mpirun.coord_endpoint = endpoint;
    // The agents' key: mpirun's environment and -x, never the argv (readable by anyone).
    mpirun.env.push_back(std::string(wire::kRunKeyEnv) + "=" + impl_->pool->agent_key_text());
    // Eight agents echoing the coordinator's info lines drown its own summary: they
    // log warnings and errors, unless the coordinator was asked for debug or timing.
    const bool has_level = std::find(mpirun.agent_args.begin(), mpirun.agent_args.end(),
                                     "--log-level") != mpirun.agent_args.end();
    if (!has_level) {
      const log::Level level = log::level() == log::Level::kInfo ? log::Level::kWarn : log::level();
      mpirun.agent_args.insert(mpirun.agent_args.end(), {"--log-level", log::level_name(level)});
    }
    const launch::MpirunCommand command = launch::mpirun_command(mpirun);
    log::info("launching {} agents: {}", world_, format_command(command.argv));
    launch::JobOptions job_options;
    job_options.extra_env = command.env;
    impl_->job.emplace(launch::Job::start(command.argv, job_options));
    launch::Job* job = &*impl_->job;
    impl_->pool->watch_job(
        [job]() -> std::optional<std::string> {
          if (auto status = job->poll()) return "(mpirun) " + status->describe();
          return std::nullopt;
        },
        job->exit_fd(), job->pid());
    hint = "See mpirun's output above; --startup-timeout gives slow hosts longer.";
  } else {
    // Printed whatever the log level: without it no agent can join. Z85 has no quote.
    std::cerr << "pypto-coord: waiting for " << world_ << " agents; launch them with:\n  "
              << wire::kRunKeyEnv << "='" << impl_->pool->agent_key_text() << "' mpirun -x "
              << wire::kRunKeyEnv << " -n " << world_ << " pypto-rank --coord " << endpoint
              << std::endl;
    hint = "Launch them with the command printed above (mpirun -x " +
           std::string(wire::kRunKeyEnv) + " -n " + std::to_string(world_) +
           " pypto-rank --coord " + endpoint + ", with " + wire::kRunKeyEnv + " set)";
  }
  impl_->pool->accept_all(Clock::now() + options.startup_timeout, hint);
  // Where ranks are on other hosts their timestamps need the offset of their
  // host's clock to be placed on one time line (docs/dfx.md).
  impl_->pool->measure_clocks(kClockRounds, Clock::now() + kClockProbeTime);
  prepare_report_.launch_ms = ms_since(start);
  prepare_report_.ranks.resize(static_cast<size_t>(world_));
  for (int r = 0; r < world_; ++r) {
    RankPrepareStats& stats = prepare_report_.ranks[static_cast<size_t>(r)];
    const coord::AgentInfo& agent = impl_->pool->agent(r);
    stats.rank = r;
    stats.host = agent.host;
    stats.clock_offset_ns = agent.clock_offset_ns;
    stats.clock_rtt_ns = agent.clock_rtt_ns;
  }
}

void DistributedWorker::prepare_builds(
    const std::vector<const DistributedCompiledProgram*>& programs, milliseconds timeout) {
  const auto start = Clock::now();
  const auto deadline = start + timeout;
  AgentPool& pool = *impl_->pool;
  // Per host, the hashes already sent to one of its ranks: the host's store has them
  // once that rank stored them, and the node barrier orders that before any rank reads.
  std::map<std::string, std::set<std::string>> shipped_to_host;

  for (size_t b = 0; b < programs.size(); ++b) {
    const DistributedCompiledProgram& program = *programs[b];
    auto build = std::make_unique<Build>();
    build->id = b == 0 ? "main" : "extra" + std::to_string(b);
    build->program = &program;
    build->dir_key = fs::absolute(program.dir()).lexically_normal().string();
    for (const WindowInfo& window : program.host_orch().windows) {
      wire::WireWindow wire_window;
      wire_window.name = window.name;
      wire_window.dtype = dtype_name(window.dtype);
      wire_window.bytes = static_cast<uint64_t>(window.bytes);
      for (int64_t rank : window.ranks) wire_window.ranks.push_back(static_cast<int32_t>(rank));
      std::sort(wire_window.ranks.begin(), wire_window.ranks.end());
      build->windows.push_back(std::move(wire_window));
    }
    std::vector<uint64_t> manifest_request(static_cast<size_t>(world_));
    for (int r = 0; r < world_; ++r) {
      const fs::path dir = program.chip(r).dir;
      wire::Manifest manifest = wire::build_manifest(dir, wire::kSubBuildExcludes, r);
      manifest.build = build->id;
      manifest.windows = build->windows;
      for (const wire::ManifestFile& file : manifest.files)
        build->file_of_hash.emplace(file.sha256, dir / file.path);
      prepare_report_.ranks[static_cast<size_t>(r)].files += manifest.files.size();
      manifest_request[static_cast<size_t>(r)] = impl_->next_request_id++;
      pool.send(r, manifest, {}, manifest_request[static_cast<size_t>(r)]);
      build->manifests.push_back(std::move(manifest));
    }

    int ready = 0;
    std::vector<uint64_t> blobs_request(static_cast<size_t>(world_), 0);
    while (ready < world_) {
      auto incoming = pool.next(deadline);
      if (!incoming) {
        std::string waiting;
        for (int r = 0; r < world_; ++r)
          if (blobs_request[static_cast<size_t>(r)] != UINT64_MAX)
            waiting += (waiting.empty() ? "" : ", ") + std::to_string(r);
        throw InfraError("rank(s) " + waiting + " did not finish preparing " +
                         program.dir().string() + " within " +
                         std::to_string(timeout.count() / 1000) + " s (shipping and compiling)");
      }
      const int r = incoming->rank;
      wire::Decoded& decoded = incoming->decoded;
      RankPrepareStats& stats = prepare_report_.ranks[static_cast<size_t>(r)];
      if (decoded.is<wire::Need>() &&
          decoded.envelope.request_id == manifest_request[static_cast<size_t>(r)]) {
        std::set<std::string>& shipped = shipped_to_host[pool.agent(r).host];
        wire::Blobs blobs;
        std::vector<zmq::message_t> frames;
        for (const std::string& hash : decoded.as<wire::Need>().hashes) {
          auto file = build->file_of_hash.find(hash);
          if (file == build->file_of_hash.end())
            throw InfraError("rank " + std::to_string(r) + " asked for blob " + hash +
                             ", which its manifest does not list");
          if (!shipped.insert(hash).second) continue;
          std::string bytes = read_file(file->second);
          stats.bytes_shipped += bytes.size();
          ++stats.blobs_shipped;
          frames.push_back(wire::frame_of(bytes));
          blobs.hashes.push_back(hash);
        }
        blobs_request[static_cast<size_t>(r)] = impl_->next_request_id++;
        pool.set_activity(r, "the preparation of " + program.dir().string());
        pool.send(r, blobs, std::move(frames), blobs_request[static_cast<size_t>(r)]);
      } else if (decoded.is<wire::Ready>() &&
                 decoded.envelope.request_id == blobs_request[static_cast<size_t>(r)]) {
        const wire::Ready& answer = decoded.as<wire::Ready>();
        if (!answer.ok)
          coord::throw_agent_error<ProgramError>("rank " + std::to_string(r),
                                                 answer.error.message, answer.error.exit_code);
        stats.cache_hits += answer.cache_hits;
        stats.compiles += answer.compiles;
        blobs_request[static_cast<size_t>(r)] = UINT64_MAX;
        pool.set_activity(r, "");
        ++ready;
      } else {
        throw InfraError("unexpected " + wire::message_type_name(decoded.type()) + " from rank " +
                         std::to_string(r) + " while preparing " + program.dir().string());
      }
    }
    impl_->builds.push_back(std::move(build));
  }
  prepare_report_.prepare_ms = ms_since(start);
}

const DistributedWorker::Build& DistributedWorker::build_of(
    const DistributedCompiledProgram& program) const {
  const std::string key = fs::absolute(program.dir()).lexically_normal().string();
  for (const auto& build : impl_->builds)
    if (build->dir_key == key) return *build;
  throw UsageError(program.dir().string() +
                   " was not prepared by this worker; pass it to DistributedWorker::prepare "
                   "(as the program or in extra_compiled)");
}

void DistributedWorker::check_alive() const {
  if (impl_->failure) std::rethrow_exception(impl_->failure);
  if (impl_->closed) throw UsageError("the distributed worker is closed");
}

void DistributedWorker::fail(const std::exception& error) {
  // Called from a catch block: keep the first error itself (its class decides the exit
  // code) for every later call.
  if (!impl_->failure) impl_->failure = std::current_exception();
  const std::string reason = error.what();
  if (impl_->pool) impl_->pool->abort_all(reason);
  if (impl_->job) impl_->job->stop(kStopGrace);
  impl_->closed = true;
}

RunHandle DistributedWorker::submit(const DistributedCompiledProgram& program,
                                    std::vector<Tensor> host_args,
                                    const DistributedRunOptions& options) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  check_alive();
  const Build& build = build_of(program);
  // Same checks as a single chip: one tensor per parameter, declared dtype and shape.
  check_arguments(program.params(), host_args);
  scalar_values(program.scalars(), options.scalars);  // a bad --scalar fails before any dispatch
  while (impl_->in_flight.size() >= static_cast<size_t>(kMaxInFlight))
    pump_until_done(*impl_->in_flight.front());

  auto state = std::make_shared<RunHandle::State>();
  state->program = &program;
  state->build = &build;
  state->args = std::move(host_args);
  for (const ParamInfo& t : program.host_orch().intermediates)
    state->intermediates.push_back(Tensor::empty(t.dtype, t.shape));
  state->options = options;
  state->start = Clock::now();
  const bool has_windows = !build.windows.empty();
  for (int r = 0; r < world_; ++r) {
    std::deque<WorkItem>& queue = impl_->queues[static_cast<size_t>(r)];
    if (options.reset_windows && has_windows) {
      WorkItem item;
      item.run = state;
      item.reset = true;
      queue.push_back(item);
      ++state->pending;
    }
    uint64_t k = 0;
    for (const Dispatch* dispatch : program.dispatches_of(r)) {
      WorkItem item;
      item.run = state;
      item.dispatch = dispatch;
      item.index = k++;
      queue.push_back(item);
      ++state->pending;
    }
  }
  impl_->in_flight.push_back(state);
  if (state->pending == 0) state->finished = true;
  try {
    for (int r = 0; r < world_; ++r) feed(r);
  } catch (const std::exception& e) {
    fail(e);
    throw;
  }
  RunHandle handle;
  handle.worker_ = this;
  handle.state_ = state;
  return handle;
}

DistributedRunResult DistributedWorker::run(const DistributedCompiledProgram& program,
                                            std::vector<Tensor>& host_args,
                                            const DistributedRunOptions& options) {
  RunHandle handle = submit(program, host_args, options);
  DistributedRunResult result = handle.wait();
  // Tensors are handles: the outputs were written into host_args' buffers already.
  return result;
}

// Sends rank r's next work item when it is idle.
void DistributedWorker::feed(int rank) {
  std::optional<WorkItem>& outstanding = impl_->outstanding[static_cast<size_t>(rank)];
  std::deque<WorkItem>& queue = impl_->queues[static_cast<size_t>(rank)];
  if (outstanding || queue.empty()) return;
  WorkItem item = std::move(queue.front());
  queue.pop_front();
  item.request_id = impl_->next_request_id++;
  AgentPool& pool = *impl_->pool;
  const RunHandle::State& run = *item.run;

  if (item.reset) {
    item.deadline = Clock::now() + kDefaultDispatchTimeout;
    pool.set_activity(rank, "the reset of " + run.program->dir().string() + "'s windows");
    pool.send(rank, wire::Reset{run.build->id}, {}, item.request_id);
    outstanding = std::move(item);
    return;
  }

  const Dispatch& plan = *item.dispatch;
  const OrchestrationInfo* orch = run.program->chip(rank).config.find_orchestration(plan.program);
  wire::Dispatch message;
  message.build = run.build->id;
  message.index = item.index;
  message.program = plan.program;
  std::vector<zmq::message_t> frames;
  for (size_t i = 0; i < plan.args.size(); ++i) {
    const HostArg& arg = plan.args[i];
    wire::DispatchArg wire_arg;
    switch (arg.kind) {
      case HostArgKind::kHost: {
        const Tensor box = host_box(*run.program, run.args, run.intermediates, arg);
        wire_arg.kind = wire::DispatchArg::kTensor;
        wire_arg.tensor.name = arg.param;
        wire_arg.tensor.dtype = dtype_name(box.dtype());
        wire_arg.tensor.shape = arg.shape;
        wire_arg.tensor.direction = arg_kind_name(orch->signature.at(i));
        if (wire_arg.tensor.direction != "Out") {
          wire_arg.tensor.nbytes = box.nbytes();
          frames.push_back(frame_of_tensor(box));
        }
        break;
      }
      case HostArgKind::kWindow: {
        wire_arg.kind = wire::DispatchArg::kWindow;
        wire_arg.window = arg.window;
        const auto& windows = run.program->host_orch().windows;
        for (size_t w = 0; w < windows.size(); ++w)
          if (windows[w].name == arg.window) wire_arg.window_id = static_cast<int64_t>(w);
        break;
      }
      case HostArgKind::kScalar:
        wire_arg.kind = wire::DispatchArg::kScalar;
        wire_arg.scalar =
            arg.scalar_bits(run.program->scalars(),
                            scalar_values(run.program->scalars(), run.options.scalars));
        break;
    }
    message.args.push_back(std::move(wire_arg));
  }
  const DistributedRunOptions& options = run.options;
  message.dfx = wire::to_wire(options.config.dfx_options());
  message.run = wire::to_wire(options.config.run_options());
  message.run.platform = run.program->platform();
  const milliseconds dispatch_timeout = options.dispatch_timeout.value_or(kDefaultDispatchTimeout);
  message.run.dispatch_timeout_ms = static_cast<uint64_t>(dispatch_timeout.count());
  if (options.wait_timeout) message.run.wait_timeout_ms = static_cast<uint64_t>(options.wait_timeout->count());
  item.deadline = Clock::now() + dispatch_timeout + kDispatchSlack;
  pool.set_activity(rank, "dispatch d" + std::to_string(item.index) + " (program '" +
                              plan.program + "')");
  pool.send(rank, message, std::move(frames), item.request_id);
  log::debug("sent dispatch d{} of '{}' to rank {}", item.index, plan.program, rank);
  outstanding = std::move(item);
}

bool DistributedWorker::pump(Clock::time_point deadline) {
  AgentPool& pool = *impl_->pool;
  Clock::time_point wake = deadline;
  for (int r = 0; r < world_; ++r) {
    feed(r);
    if (const auto& item = impl_->outstanding[static_cast<size_t>(r)]) {
      if (Clock::now() >= item->deadline)
        throw InfraError("rank " + std::to_string(r) + " did not answer " +
                         pool.agent(r).activity + " before its deadline; the agent is stuck");
      wake = std::min(wake, item->deadline);
    }
  }
  auto incoming = pool.next(wake);
  if (!incoming) return Clock::now() < deadline;

  const int r = incoming->rank;
  wire::Decoded& decoded = incoming->decoded;
  std::optional<WorkItem>& outstanding = impl_->outstanding[static_cast<size_t>(r)];
  if (!outstanding || decoded.envelope.request_id != outstanding->request_id)
    throw InfraError("unexpected " + wire::message_type_name(decoded.type()) + " from rank " +
                     std::to_string(r) + " (request " + std::to_string(decoded.envelope.request_id) +
                     ")");
  WorkItem item = std::move(*outstanding);
  outstanding.reset();
  pool.set_activity(r, "");
  RunHandle::State& run = *item.run;

  auto raise = [&](const wire::WireError& error) {
    coord::throw_agent_error<KernelRuntimeError>("rank " + std::to_string(r), error.message,
                                                 error.exit_code);
  };
  if (item.reset) {
    const wire::Ready& ready = decoded.as<wire::Ready>();
    if (!ready.ok) raise(ready.error);
  } else {
    wire::DispatchDone& done = decoded.as<wire::DispatchDone>();
    if (!done.ok) raise(done.error);
    const Dispatch& plan = *item.dispatch;
    // Outputs come back in argument order of the Out/InOut tensors.
    size_t output = 0;
    const OrchestrationInfo* orch = run.program->chip(r).config.find_orchestration(plan.program);
    for (size_t i = 0; i < plan.args.size(); ++i) {
      const HostArg& arg = plan.args[i];
      if (arg.kind != HostArgKind::kHost) continue;
      const ArgKind kind = orch->signature.at(i);
      if (kind != ArgKind::kOut && kind != ArgKind::kInOut) continue;
      Tensor box = host_box(*run.program, run.args, run.intermediates, arg);
      if (output >= done.outputs.size() || done.outputs[output].nbytes != box.nbytes())
        throw InfraError("rank " + std::to_string(r) + " returned outputs that do not match " +
                         "dispatch d" + std::to_string(item.index) + " of '" + plan.program +
                         "' (argument '" + arg.param + "')");
      Tensor returned = Tensor::borrow(decoded.payloads[output].data(), box.dtype(), box.shape());
      box.copy_from(returned);
      ++output;
    }
    DispatchOutcome outcome;
    outcome.rank = r;
    outcome.index = item.index;
    outcome.program = plan.program;
    outcome.next_level = "next_levels/" + std::to_string(r);
    outcome.host = pool.agent(r).host;
    outcome.start_unix_ns = done.start_unix_ns;
    outcome.end_unix_ns = done.end_unix_ns;
    outcome.timings = done.timings;
    for (size_t f = 0; f < done.dfx_files.size(); ++f) {
      const zmq::message_t& frame = decoded.payloads[done.outputs.size() + f];
      outcome.dfx_files.emplace_back(done.dfx_files[f],
                                     std::string(static_cast<const char*>(frame.data()), frame.size()));
    }
    run.result.dispatches.push_back(std::move(outcome));
  }
  if (--run.pending == 0) {
    run.finished = true;
    run.result.wall_ms = ms_since(run.start);
    std::sort(run.result.dispatches.begin(), run.result.dispatches.end(),
              [](const DispatchOutcome& a, const DispatchOutcome& b) {
                return std::tie(a.rank, a.index) < std::tie(b.rank, b.index);
              });
    while (!impl_->in_flight.empty() && impl_->in_flight.front()->finished)
      impl_->in_flight.pop_front();
  }
  feed(r);
  return true;
}

void DistributedWorker::pump_until_done(const RunHandle::State& state) {
  try {
    while (!state.finished) pump(Clock::time_point::max());
  } catch (const std::exception& e) {
    fail(e);
    throw;
  }
}

DistributedRunResult RunHandle::wait() {
  if (!state_) throw UsageError("RunHandle::wait on an empty handle");
  std::lock_guard<std::mutex> lock(worker_->impl_->mu);
  if (!state_->finished) {
    worker_->check_alive();
    worker_->pump_until_done(*state_);
  }
  return state_->result;
}

bool RunHandle::done() const { return state_ && state_->finished; }

std::vector<Tensor>& RunHandle::args() {
  if (!state_) throw UsageError("RunHandle::args on an empty handle");
  return state_->args;
}

void DistributedWorker::close() {
  stop_keepalive();
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->closed) return;
  try {
    while (!impl_->in_flight.empty()) pump_until_done(*impl_->in_flight.front());
  } catch (const std::exception&) {
    return;  // fail() stopped everything
  }
  impl_->closed = true;
  if (impl_->pool) impl_->pool->shutdown_all();
  if (impl_->job) {
    if (!impl_->job->wait_for(kShutdownGrace)) {
      log::warn("the agents did not exit within {} s of SHUTDOWN; stopping them",
                kShutdownGrace.count() / 1000);
      impl_->job->stop(kStopGrace);
    }
  }
}

}  // namespace pypto
