#include "pypto/distributed_worker.h"

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

#include "artifact/chip_build.h"
#include "artifact/host_orch.h"
#include "artifact/kernel_config.h"
#include "common/fs_util.h"
#include "common/log.h"
#include "common/seconds_text.h"
#include "common/subprocess.h"
#include "common/wire/blob_store.h"
#include "common/wire/manifest.h"
#include "common/wire/tensor_frame.h"
#include "coordinator/agent_pool.h"
#include "coordinator/interrupt.h"
#include "coordinator/progress_line.h"
#include "coordinator/stall_diagnosis.h"
#include "launch/hostfile.h"
#include "launch/job.h"
#include "launch/job_scratch.h"
#include "launch/mpirun_command.h"
#include "launch/mpirun_notice.h"
#include "launch/reachable_address.h"
#include "pypto/chip_worker.h"
#include "pypto/error.h"

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
constexpr milliseconds kPrepareSlack{std::chrono::seconds(2)};
// After a failure the agents were told to ABORT, or died: mpirun tears the job down by
// itself. It gets this long before it is signalled (a second stop to an mpirun already
// aborting crashed it in PMIx_Finalize), so exactly one stop sequence runs.
constexpr milliseconds kSelfStopGrace{std::chrono::seconds(3)};
// How long mpirun gets to exit once its agents have left: it tidies up in milliseconds.
constexpr milliseconds kLauncherAfterAgents{300};
// Clock probes at startup: a few round trips, bounded so a slow host delays little.
constexpr int kClockRounds = 5;
constexpr milliseconds kClockProbeTime{std::chrono::seconds(3)};
// After a failure: how long the ranks have to say what they are doing. They
// answer from their control threads at once; a rank that does not is gone or stuck.
constexpr milliseconds kStateGatherTime{1500};

// Tells the workers apart, so a resident tensor of another worker is refused.
std::atomic<uint64_t> next_worker_serial{1};

const char* resident_op_name(uint8_t op) {
  switch (op) {
    case wire::Resident::kAlloc: return "allocation";
    case wire::Resident::kWrite: return "copy_to";
    case wire::Resident::kRead: return "copy_from";
    default: return "free";
  }
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

// Where local agents put their rank workspaces unless told (rank_agent/agent_options.h:
// workspaces/<run id>/ beside their blob store), for the teardown to remove after a
// failure that killed them; nullopt when the agents are given --workspace.
std::optional<fs::path> agents_default_workspace(const std::vector<std::string>& agent_args,
                                                 const std::string& run_id) {
  std::optional<fs::path> store;
  for (size_t i = 0; i < agent_args.size(); ++i) {
    const std::string& arg = agent_args[i];
    if (arg == "--workspace" || arg.rfind("--workspace=", 0) == 0) return std::nullopt;
    if (arg.rfind("--blob-store=", 0) == 0) store = arg.substr(13);
    if (arg == "--blob-store" && i + 1 < agent_args.size()) store = agent_args[i + 1];
  }
  try {
    // make_run_id's ids are made of [A-Za-z0-9-]: the agents use them as they are.
    return wire::BlobStore::cache_root(wire::BlobStore::default_root(store)) / "workspaces" /
           run_id;
  } catch (const std::exception&) {
    return std::nullopt;  // the agents cannot place one either
  }
}

// The index of window `name` in host_orch.json: its id in every rank's window set.
int64_t window_index(const HostOrch& plan, const std::string& name) {
  for (size_t w = 0; w < plan.windows.size(); ++w)
    if (plan.windows[w].name == name) return static_cast<int64_t>(w);
  return -1;  // from_dir checked that every named window exists
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

struct ResidentTensor::State {
  uint64_t id = 0;
  uint64_t worker = 0;  // the serial of the worker that allocated it
  DType dtype = DType::kF32;
  Shape shape;
  ResidentLayout layout = ResidentLayout::kStacked;
  bool freed = false;
  // What each rank holds: [1, ...] of a stacked tensor (the row [r]), the whole of a
  // replicated one.
  Shape part_shape() const {
    Shape part = shape;
    if (layout == ResidentLayout::kStacked) part[0] = 1;
    return part;
  }
};

const ResidentTensor::State& ResidentTensor::state() const {
  if (!state_)
    throw UsageError("an empty ResidentTensor (allocate it with alloc_stacked_tensor or alloc_tensor)");
  return *state_;
}

DType ResidentTensor::dtype() const { return state().dtype; }
const Shape& ResidentTensor::shape() const { return state().shape; }
ResidentLayout ResidentTensor::layout() const { return state().layout; }
uint64_t ResidentTensor::id() const { return state().id; }
bool ResidentTensor::freed() const { return state().freed; }
std::string ResidentTensor::describe() const {
  if (!state_) return "an empty ResidentTensor";
  return std::string("resident ") + dtype_name(state_->dtype) + shape_string(state_->shape) + " (" +
         (state_->layout == ResidentLayout::kStacked ? "stacked" : "replicated") + ", id " +
         std::to_string(state_->id) + ")";
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
  bool reset = false;  // RESET of the build's windows, else a dispatch or a RESIDENT
  bool reset_first = false;  // a dispatch that zeroes the windows before it runs
  std::optional<wire::Resident> resident;
  Tensor resident_src;  // a write's bytes: this rank's part of the caller's tensor
  Tensor resident_dst;  // a read's destination: a view of the caller's tensor
  const Dispatch* dispatch = nullptr;
  uint64_t index = 0;  // k
  uint64_t request_id = 0;
  Clock::time_point deadline{};
};

struct RunHandle::State {
  const DistributedCompiledProgram* program = nullptr;  // null for resident operations
  const DistributedWorker::Build* build = nullptr;
  std::vector<Tensor> args;              // Tensor() where a resident tensor is bound
  std::vector<ResidentTensor> resident;  // by parameter: the bound ones valid
  std::vector<Tensor> intermediates;  // host_orch.json's, zero-filled per run
  DistributedRunOptions options;
  size_t pending = 0;

  // The resident tensor bound to the parameter `arg` names, if any.
  const ResidentTensor* resident_for(const HostArg& arg) const {
    const auto& params = program->params();
    for (size_t p = 0; p < params.size(); ++p)
      if (params[p].name == arg.param) return resident[p].valid() ? &resident[p] : nullptr;
    return nullptr;  // an intermediate
  }
  bool finished = false;
  Clock::time_point start;
  DistributedRunResult result;
};

struct DistributedWorker::Impl {
  zmq::context_t context{1};
  std::optional<coord::InterruptScope> interrupts;
  std::unique_ptr<AgentPool> pool;
  // Before `job`: removed only after the job has been stopped.
  std::optional<launch::JobScratch> scratch;
  std::optional<launch::Job> job;
  std::vector<std::unique_ptr<Build>> builds;
  std::vector<std::deque<WorkItem>> queues;          // by rank: not yet sent
  std::vector<std::optional<WorkItem>> outstanding;  // by rank: sent, not answered
  std::deque<std::shared_ptr<RunHandle::State>> in_flight;
  uint64_t next_request_id = 1;
  uint64_t serial = next_worker_serial++;
  uint64_t next_resident_id = 1;
  std::exception_ptr failure;
  // Set by fail() before it aborts the agents; read by the stderr relay's thread.
  std::shared_ptr<std::atomic<bool>> aborted = std::make_shared<std::atomic<bool>>(false);
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
    worker->prepare_builds(programs, options.prepare_timeout, options.progress);
  } catch (const std::exception& e) {
    std::rethrow_exception(worker->fail(e));
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
        (void)fail(e);  // every later call rethrows it
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
    // Their compiles stop at the prepare deadline, and they say which source ran into it.
    if (std::find(mpirun.agent_args.begin(), mpirun.agent_args.end(), "--prepare-timeout") ==
        mpirun.agent_args.end()) {
      mpirun.agent_args.insert(mpirun.agent_args.end(),
                               {"--prepare-timeout", seconds_text(options.prepare_timeout)});
    }
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
    if (hosts.empty() && !launch::mpirun_args_name_hosts(mpirun.mpirun_args)) {
      // Every rank on this host: what Open MPI and the agents write goes where the
      // teardown removes it, whatever happens to the job.
      impl_->scratch.emplace(launch::JobScratch::create(mpirun.mpirun_args));
      for (const std::string& entry : impl_->scratch->env()) job_options.extra_env.push_back(entry);
      if (auto workspaces = agents_default_workspace(mpirun.agent_args, pool_options.run_id))
        impl_->scratch->also_remove(*workspaces);
    }
    // mpirun's stderr passes through us: its notice names a rank that died before
    // its HELLO, which its exit code cannot (launch/mpirun_notice.h).
    auto notices = std::make_shared<launch::MpirunNotices>();
    job_options.on_stderr_line = [notices](std::string_view line) { notices->add_line(line); };
    // Once fail() has aborted the job and reported why, mpirun's banner about the
    // ranks that then exited nonzero is a second, vaguer copy of that error.
    job_options.drop_stderr_block = [aborted = impl_->aborted](std::string_view block) {
      return aborted->load() && launch::is_nonzero_exit_banner(block);
    };
    impl_->job.emplace(launch::Job::start(command.argv, job_options));
    launch::Job* job = &*impl_->job;
    impl_->pool->watch_job(
        [job]() -> std::optional<AgentPool::JobEnd> {
          if (auto status = job->poll())
            return AgentPool::JobEnd{
                "mpirun (pid " + std::to_string(job->pid()) + ") " + status->describe(),
                status->signal != 0, status->code};
          return std::nullopt;
        },
        job->exit_fd(), job->pid(), [notices] { return notices->first(); });
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
    const std::vector<const DistributedCompiledProgram*>& programs, milliseconds timeout,
    bool progress) {
  const auto start = Clock::now();
  // Embedded agents stop at `timeout` themselves and name the source they were
  // compiling; this later deadline catches an agent that cannot even say so.
  const auto deadline = start + timeout + kPrepareSlack;
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
    int shipped_ranks = 0;
    std::vector<uint64_t> blobs_request(static_cast<size_t>(world_), 0);
    // Compiling many kernels or shipping a big build takes a while: say how far it got.
    coord::ProgressLine line = progress ? coord::ProgressLine::on_stderr(
                                              "prepare " + program.dir().filename().string())
                                        : coord::ProgressLine("", -1, false);
    while (ready < world_) {
      auto incoming = pool.next(deadline);
      if (!incoming) {
        std::string waiting;
        for (int r = 0; r < world_; ++r)
          if (blobs_request[static_cast<size_t>(r)] != UINT64_MAX)
            waiting += (waiting.empty() ? "" : ", ") + std::to_string(r);
        throw InfraError("rank(s) " + waiting + " did not finish preparing " +
                         program.dir().string() + " within " +
                         seconds_text(timeout) + " (--prepare-timeout: shipping, compiling, "
                         "creating windows)");
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
        log::debug("sent rank {} the {} blob(s) it lacks of {}", r, blobs.hashes.size(),
                   program.dir().string());
        pool.send(r, blobs, std::move(frames), blobs_request[static_cast<size_t>(r)]);
        line.update("ranks shipped to", ++shipped_ranks, world_);
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
        line.update("ranks ready", ++ready, world_);
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

std::exception_ptr DistributedWorker::fail(const std::exception& error) {
  // Called from a catch block: keep the first error itself (its class decides the exit
  // code) for every later call; a dispatch that failed or stalled while peers waited
  // becomes one error that explains every rank (coordinator/stall_diagnosis.h).
  if (!impl_->failure) {
    impl_->failure = std::current_exception();
    if (auto diagnosed = diagnose(error)) impl_->failure = diagnosed;
  }
  const std::string reason = error.what();
  impl_->aborted->store(true);
  if (impl_->pool) impl_->pool->abort_all(reason);
  if (impl_->job) {
    // The agents leave on ABORT (or are gone) and mpirun then ends by itself; only one
    // that does not is stopped.
    bool told = false;
    for (int r = 0; impl_->pool && r < world_; ++r)
      told = told || !impl_->pool->agent(r).identity.empty();
    // Once every agent (all on this host) has left, mpirun only sits out its kill
    // timeout (odls_base_sigkill_timeout, a second or two) before it exits: when its
    // files are ours to remove, it is not waited for.
    const auto grace_end = Clock::now() + kSelfStopGrace;
    const bool agents_gone =
        told && impl_->scratch && impl_->pool->wait_local_agents_gone(grace_end);
    const auto grace_left = std::max(
        milliseconds(0), std::chrono::duration_cast<milliseconds>(grace_end - Clock::now()));
    if (told && !impl_->job->wait_for(agents_gone ? kLauncherAfterAgents : grace_left) &&
        impl_->scratch) {
      // Still aborting: a SIGTERM now would land in its teardown. Everything runs on
      // this host and its files are the job's own directories: kill, then remove them.
      impl_->job->kill_all();
    }
    impl_->job->stop(kStopGrace);  // signals only what is still running
  }
  if (impl_->scratch) impl_->scratch->remove();
  impl_->closed = true;
  return impl_->failure;
}

std::exception_ptr DistributedWorker::diagnose(const std::exception& error) {
  // Only a dispatch that a rank reported failed (a kernel error, a wait past its
  // deadline) has waits to explain; a rank that died is named by its own message.
  if (!impl_->pool || !dynamic_cast<const KernelRuntimeError*>(&error)) return nullptr;
  const RunHandle::State* run = nullptr;
  for (const auto& state : impl_->in_flight)
    if (state->program && !state->finished) run = state.get();
  if (!run) return nullptr;
  const auto diagnosis =
      coord::diagnose_stall(impl_->pool->gather_states(Clock::now() + kStateGatherTime),
                            run->program->host_orch().windows);
  if (!diagnosis) return nullptr;
  return std::make_exception_ptr(coord::StalledDispatchError(*diagnosis));
}

namespace {

// "x[2:3, 0:1024]", the box a dispatch argument names, for messages.
std::string box_text(const HostArg& arg) {
  std::string text = arg.param + "[";
  for (size_t d = 0; d < arg.offsets.size(); ++d)
    text += (d ? ", " : "") + std::to_string(arg.offsets[d]) + ":" +
            std::to_string(arg.offsets[d] + arg.shape[d]);
  return text + "]";
}

// Whether every dispatch may use resident tensor `tensor` for parameter `param`.
void check_binding(const DistributedCompiledProgram& program, const ParamInfo& param,
                   const ResidentTensor& tensor) {
  if (!param.accepts(tensor.dtype(), tensor.shape()))
    throw UsageError("argument '" + param.name + "' must be " + param.type_string() + ", given " +
                     tensor.describe());
  if (auto problem = resident_binding_problem(program, param, tensor.layout()))
    throw UsageError("argument '" + param.name + "' is bound to " + tensor.describe() + ", " +
                     *problem);
}

}  // namespace

std::optional<std::string> resident_binding_problem(const DistributedCompiledProgram& program,
                                                    const ParamInfo& param, ResidentLayout layout) {
  const bool stacked = layout == ResidentLayout::kStacked;
  if (stacked && (param.shape.empty() || param.shape[0] != program.world_size()))
    return "which has one row per rank, but the parameter is " + param.type_string() +
           ", not [" + std::to_string(program.world_size()) + ", ...]";
  for (int64_t r = 0; r < program.world_size(); ++r) {
    uint64_t k = 0;
    for (const Dispatch* dispatch : program.dispatches_of(r)) {
      const OrchestrationInfo* orch = program.chip(r).config.find_orchestration(dispatch->program);
      for (size_t i = 0; i < dispatch->args.size(); ++i) {
        const HostArg& arg = dispatch->args[i];
        if (arg.kind != HostArgKind::kHost || arg.param != param.name) continue;
        const std::string where = "dispatch d" + std::to_string(k) + " ('" + dispatch->program +
                                  "') of rank " + std::to_string(r);
        if (stacked && (arg.offsets.empty() || arg.offsets[0] != r || arg.shape[0] != 1))
          return "whose row [" + std::to_string(r) + "] lives on rank " + std::to_string(r) +
                 ", but " + where + " uses " + box_text(arg) +
                 "; pass a host tensor for it, or a replicated resident tensor (alloc_tensor) "
                 "when the dispatches only read it";
        if (!stacked && orch->signature.at(i) != ArgKind::kIn)
          return "which dispatches may only read, but " + where + " writes " + box_text(arg) +
                 "; use a stacked resident tensor (alloc_stacked_tensor) or a host tensor";
      }
      ++k;
    }
  }
  return std::nullopt;
}

void DistributedWorker::check_resident(const ResidentTensor& tensor, const char* operation) const {
  if (!tensor.valid())
    throw UsageError(std::string(operation) +
                     ": an empty ResidentTensor (allocate it with alloc_stacked_tensor or "
                     "alloc_tensor)");
  if (tensor.state_->worker != impl_->serial)
    throw UsageError(std::string(operation) + ": " + tensor.describe() +
                     " belongs to another DistributedWorker; a resident tensor lives in the "
                     "agents of the worker that allocated it");
  if (tensor.state_->freed)
    throw UsageError(std::string(operation) + ": " + tensor.describe() +
                     " was freed; allocate a new one");
}

RunHandle DistributedWorker::submit(const DistributedCompiledProgram& program,
                                    std::vector<Tensor> host_args,
                                    const DistributedRunOptions& options) {
  return submit(program, std::vector<RunArgument>(std::make_move_iterator(host_args.begin()),
                                                  std::make_move_iterator(host_args.end())),
                options);
}

RunHandle DistributedWorker::submit(const DistributedCompiledProgram& program,
                                    std::vector<RunArgument> args,
                                    const DistributedRunOptions& options) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return submit_locked(program, std::move(args), options);
}

RunHandle DistributedWorker::submit_locked(const DistributedCompiledProgram& program,
                                           std::vector<RunArgument> args,
                                           const DistributedRunOptions& options) {
  check_alive();
  const Build& build = build_of(program);
  // Same checks as a single chip: one tensor per parameter, declared dtype and shape.
  const std::vector<ParamInfo>& params = program.params();
  std::vector<Tensor> host_args(args.size());
  std::vector<ResidentTensor> resident(args.size());
  std::vector<ParamInfo> host_params;
  std::vector<Tensor> shipped;
  for (size_t p = 0; p < args.size(); ++p) {
    if (auto* tensor = std::get_if<Tensor>(&args[p])) {
      host_args[p] = std::move(*tensor);
      if (p < params.size()) {
        host_params.push_back(params[p]);
        shipped.push_back(host_args[p]);
      }
    } else {
      resident[p] = std::get<ResidentTensor>(args[p]);
    }
  }
  if (args.size() != params.size()) check_arguments(params, host_args);  // names the count
  check_arguments(host_params, shipped);
  for (size_t p = 0; p < params.size(); ++p) {
    if (!resident[p].valid() && !std::holds_alternative<ResidentTensor>(args[p])) continue;
    check_resident(resident[p], ("run of " + program.dir().string()).c_str());
    check_binding(program, params[p], resident[p]);
  }
  scalar_values(program.scalars(), options.scalars);  // a bad --scalar fails before any dispatch
  while (impl_->in_flight.size() >= static_cast<size_t>(kMaxInFlight))
    pump_until_done(*impl_->in_flight.front());

  auto state = std::make_shared<RunHandle::State>();
  state->program = &program;
  state->build = &build;
  state->args = std::move(host_args);
  state->resident = std::move(resident);
  for (const ParamInfo& t : program.host_orch().intermediates)
    state->intermediates.push_back(Tensor::empty(t.dtype, t.shape));
  state->options = options;
  state->start = Clock::now();
  const bool has_windows = !build.windows.empty();
  for (int r = 0; r < world_; ++r) {
    std::deque<WorkItem>& queue = impl_->queues[static_cast<size_t>(r)];
    const std::vector<const Dispatch*> dispatches = program.dispatches_of(r);
    // The reset is collective: every rank takes part, in its first dispatch
    // (no round trip of its own) or, without one, in a RESET.
    const bool reset = options.reset_windows && has_windows;
    if (reset && dispatches.empty()) {
      WorkItem item;
      item.run = state;
      item.reset = true;
      queue.push_back(item);
      ++state->pending;
    }
    uint64_t k = 0;
    for (const Dispatch* dispatch : dispatches) {
      WorkItem item;
      item.run = state;
      item.dispatch = dispatch;
      item.reset_first = reset && k == 0;
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
    std::rethrow_exception(fail(e));
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

DistributedRunResult DistributedWorker::run(const DistributedCompiledProgram& program,
                                            std::vector<RunArgument>& args,
                                            const DistributedRunOptions& options) {
  RunHandle handle = submit(program, args, options);
  return handle.wait();
}

ResidentTensor DistributedWorker::alloc_resident(DType dtype, const Shape& shape,
                                                 ResidentLayout layout) {
  ResidentTensor tensor;
  tensor.state_ = std::make_shared<ResidentTensor::State>();
  tensor.state_->dtype = dtype;
  tensor.state_->shape = shape;
  tensor.state_->layout = layout;
  resident_op(tensor, wire::Resident::kAlloc, nullptr, nullptr);
  return tensor;
}

ResidentTensor DistributedWorker::alloc_stacked_tensor(DType dtype, const Shape& part_shape) {
  Shape shape{world_};
  shape.insert(shape.end(), part_shape.begin(), part_shape.end());
  return alloc_resident(dtype, shape, ResidentLayout::kStacked);
}

ResidentTensor DistributedWorker::alloc_tensor(DType dtype, const Shape& shape) {
  return alloc_resident(dtype, shape, ResidentLayout::kReplicated);
}

void DistributedWorker::copy_to(const ResidentTensor& dst, const Tensor& src) {
  resident_op(dst, wire::Resident::kWrite, &src, nullptr);
}

void DistributedWorker::copy_from(const ResidentTensor& src, Tensor& dst) {
  resident_op(src, wire::Resident::kRead, nullptr, &dst);
}

void DistributedWorker::free(ResidentTensor& tensor) {
  resident_op(tensor, wire::Resident::kFree, nullptr, nullptr);
  tensor.state_->freed = true;
}

void DistributedWorker::resident_op(const ResidentTensor& tensor, uint8_t op, const Tensor* src,
                                    Tensor* dst) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  check_alive();
  const char* name = resident_op_name(op);
  ResidentTensor::State& t = *tensor.state_;
  if (op == wire::Resident::kAlloc) {
    for (int64_t extent : t.shape)
      if (extent < 0)
        throw UsageError("allocating a resident tensor of shape " + shape_string(t.shape) +
                         ": extents must be non-negative");
    t.worker = impl_->serial;
    t.id = impl_->next_resident_id++;
  } else {
    check_resident(tensor, name);
  }
  for (const Tensor* host : {src, static_cast<const Tensor*>(dst)})
    if (host && (host->dtype() != t.dtype || host->shape() != t.shape))
      throw UsageError(std::string(name) + ": " + tensor.describe() + " and the host tensor " +
                       host->describe() + " differ in dtype or shape");
  while (impl_->in_flight.size() >= static_cast<size_t>(kMaxInFlight))
    pump_until_done(*impl_->in_flight.front());

  auto state = std::make_shared<RunHandle::State>();
  state->start = Clock::now();
  const bool stacked = t.layout == ResidentLayout::kStacked;
  const Shape part = t.part_shape();
  for (int r = 0; r < world_; ++r) {
    // A replicated tensor reads back from rank 0: the dispatches never write it.
    if (op == wire::Resident::kRead && !stacked && r > 0) break;
    WorkItem item;
    item.run = state;
    wire::Resident message;
    message.op = op;
    message.id = t.id;
    if (op == wire::Resident::kAlloc) {
      message.dtype = dtype_name(t.dtype);
      message.shape = part;
    }
    Shape offsets(t.shape.size(), 0);
    if (stacked) offsets[0] = r;
    if (src) {
      item.resident_src = stacked ? src->slice(offsets, part) : *src;
      message.nbytes = item.resident_src.nbytes();
    }
    if (dst) item.resident_dst = stacked ? dst->slice(offsets, part) : *dst;
    item.resident = std::move(message);
    impl_->queues[static_cast<size_t>(r)].push_back(std::move(item));
    ++state->pending;
  }
  impl_->in_flight.push_back(state);
  try {
    for (int r = 0; r < world_; ++r) feed(r);
  } catch (const std::exception& e) {
    std::rethrow_exception(fail(e));
  }
  pump_until_done(*state);
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
    pool.send_work(rank, wire::Reset{run.build->id}, {}, item.request_id);
    outstanding = std::move(item);
    return;
  }

  if (item.resident) {
    std::vector<zmq::message_t> frames;
    if (item.resident->op == wire::Resident::kWrite)
      frames.push_back(wire::frame_of_tensor(item.resident_src));
    item.deadline = Clock::now() + kDefaultDispatchTimeout;
    pool.set_activity(rank, std::string("the ") + resident_op_name(item.resident->op) +
                                " of resident tensor " + std::to_string(item.resident->id));
    pool.send_work(rank, *item.resident, std::move(frames), item.request_id);
    outstanding = std::move(item);
    return;
  }

  const Dispatch& plan = *item.dispatch;
  const OrchestrationInfo* orch = run.program->chip(rank).config.find_orchestration(plan.program);
  wire::Dispatch message;
  message.build = run.build->id;
  message.index = item.index;
  message.program = plan.program;
  message.reset_windows = item.reset_first;
  std::vector<zmq::message_t> frames;
  for (size_t i = 0; i < plan.args.size(); ++i) {
    const HostArg& arg = plan.args[i];
    wire::DispatchArg wire_arg;
    switch (arg.kind) {
      case HostArgKind::kHost: {
        if (const ResidentTensor* resident = run.resident_for(arg)) {
          // check_binding made sure the box lies in this rank's part.
          wire_arg.kind = wire::DispatchArg::kResident;
          wire_arg.resident_id = resident->id();
          wire_arg.offsets = arg.offsets;
          if (resident->layout() == ResidentLayout::kStacked) wire_arg.offsets[0] = 0;
          wire_arg.tensor.name = arg.param;
          wire_arg.tensor.dtype = dtype_name(resident->dtype());
          wire_arg.tensor.shape = arg.shape;
          wire_arg.tensor.direction = arg_kind_name(orch->signature.at(i));
          if (!arg.window.empty()) {  // in place: the agent moves it into the window and back
            wire_arg.window = arg.window;
            wire_arg.window_id = window_index(run.program->host_orch(), arg.window);
          }
          break;
        }
        const Tensor box = host_box(*run.program, run.args, run.intermediates, arg);
        wire_arg.kind = wire::DispatchArg::kTensor;
        wire_arg.tensor.name = arg.param;
        wire_arg.tensor.dtype = dtype_name(box.dtype());
        wire_arg.tensor.shape = arg.shape;
        wire_arg.tensor.direction = arg_kind_name(orch->signature.at(i));
        if (wire_arg.tensor.direction != "Out") {
          wire_arg.tensor.nbytes = box.nbytes();
          frames.push_back(wire::frame_of_tensor(box));
        }
        if (!arg.window.empty()) {  // in place: the agent keeps the data in this window
          wire_arg.window = arg.window;
          wire_arg.window_id = window_index(run.program->host_orch(), arg.window);
        }
        break;
      }
      case HostArgKind::kWindow: {
        wire_arg.kind = wire::DispatchArg::kWindow;
        wire_arg.window = arg.window;
        wire_arg.window_id = window_index(run.program->host_orch(), arg.window);
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
                              plan.program + "')" +
                              (item.reset_first ? ", which first zeroes the windows" : ""));
  pool.send_work(rank, message, std::move(frames), item.request_id);
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
  } else if (item.resident) {
    const wire::ResidentDone& done = decoded.as<wire::ResidentDone>();
    if (!done.ok) raise(done.error);
    if (item.resident->op == wire::Resident::kRead) {
      Tensor& dst = item.resident_dst;
      if (!done.has_data || done.nbytes != dst.nbytes())
        throw InfraError("rank " + std::to_string(r) + " returned " + std::to_string(done.nbytes) +
                         " bytes of resident tensor " + std::to_string(done.id) + ", not its " +
                         std::to_string(dst.nbytes()));
      dst.copy_from(Tensor::borrow(decoded.payloads[0].data(), dst.dtype(), dst.shape()));
    }
  } else {
    wire::DispatchDone& done = decoded.as<wire::DispatchDone>();
    if (!done.ok) raise(done.error);
    const Dispatch& plan = *item.dispatch;
    // Outputs come back in argument order of the Out/InOut tensors.
    size_t output = 0;
    const OrchestrationInfo* orch = run.program->chip(r).config.find_orchestration(plan.program);
    for (size_t i = 0; i < plan.args.size(); ++i) {
      const HostArg& arg = plan.args[i];
      if (arg.kind != HostArgKind::kHost || run.resident_for(arg)) continue;
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
    std::rethrow_exception(fail(e));
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
    impl_->job->stop(kStopGrace);  // reaps, and clears the session of stragglers
  }
  if (impl_->scratch) impl_->scratch->remove();
}

}  // namespace pypto
