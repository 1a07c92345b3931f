#include "rank_agent/agent_worker.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <span>
#include <thread>
#include <cstring>

#include "artifact/assembler.h"
#include "artifact/kernel_config.h"
#include "common/fs_util.h"
#include "common/log.h"
#include "common/wire/blob_store.h"
#include "common/wire/manifest.h"
#include "common/wire/tensor_frame.h"
#include "orchestration/chip_runtime.h"
#include "pypto/chip_worker.h"
#include "pypto/compiled_program.h"
#include "pypto/error.h"
#include "pypto/param_info.h"
#include "pypto/tensor.h"
#include "rank_agent/backoff.h"
#include "rank_agent/comm_api.h"
#include "rank_agent/mpi_session.h"
#include "rank_agent/window_set.h"

namespace pypto::rank {

namespace {

// The MANIFEST does not say which platform the build targets, and the cache
// key includes it: prepare assembles for the default simulator; a DISPATCH
// for another platform assembles (or finds) its own binaries.
constexpr const char* kPreparePlatform = "a2a3sim";

int64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

int wire_exit_code(const std::exception& e) { return static_cast<int>(exit_code_of(e)); }

// The simulated cores of this rank's chip; their idle threads sleep at once when
// the ranks of this node have more core threads than the node has CPUs.
CoreCounts core_counts_for(int ranks_on_node) {
  CoreCounts cores = CoreCounts::from_env();
  const long cpus = std::max(1u, std::thread::hardware_concurrency());
  if (static_cast<long>(ranks_on_node) * (cores.aic + cores.aiv) > cpus) cores.idle_spins = 0;
  // The control thread ends a dispatch stuck past its deadline (RankAgent::control_loop),
  // so a lone task may run on the worker thread, one thread hand-off less.
  cores.run_lone_task_inline = true;
  return cores;
}

std::vector<WindowSpec> window_specs(const std::vector<wire::WireWindow>& windows) {
  std::vector<WindowSpec> specs;
  for (const auto& w : windows) {
    WindowSpec spec;
    spec.name = w.name;
    spec.bytes = w.bytes;
    // The decoder checked the name; an unknown one cannot get here.
    spec.dtype = parse_dtype(w.dtype).value_or(DType::kU8);
    spec.members.assign(w.ranks.begin(), w.ranks.end());
    specs.push_back(std::move(spec));
  }
  return specs;
}

RunConfig run_config_of(const wire::WireRunOptions& run, const wire::WireDfxOptions& dfx) {
  const RunOptions options = wire::from_wire(run, dfx);
  RunConfig config = RunConfig::from_platform(options.platform);
  config.device_id = options.device_id;
  config.aicpu_thread_num = options.aicpu_thread_num;
  config.ring_task_window = options.ring_task_window;
  config.ring_heap = options.ring_heap;
  config.ring_dep_pool = options.ring_dep_pool;
  config.enable_chip_swimlane = options.dfx.enable_chip_swimlane;
  config.enable_dump_args = options.dfx.enable_dump_args;
  config.enable_pmu = options.dfx.enable_pmu;
  config.enable_dep_gen = options.dfx.enable_dep_gen;
  config.enable_scope_stats = options.dfx.enable_scope_stats;
  return config;
}

// Every regular file under `dir`, relative and '/'-separated, sorted.
std::vector<std::string> files_under(const fs::path& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file(ec) && !it->is_symlink(ec))
      files.push_back(it->path().lexically_relative(dir).generic_string());
  }
  if (ec) throw InfraError("cannot list the DFX files in " + dir.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

// In place (docs/build-directory.md, host arguments with a "window"): the
// tensor a dispatch argument binds is a view of the first bytes of window
// `window_id`'s local copy, so kernels reduce in the window and nothing is
// copied in or out by them. `input` (the In/InOut data; nullopt for Out) is
// written there first; an Out argument sees what the window holds, which
// persists across dispatches and runs until the windows are reset. The one
// place where a host argument's bytes enter a window.
Tensor place_in_window(const WindowSet& windows, int64_t window_id, const std::string& window,
                       const ParamInfo& param, std::optional<std::span<const std::byte>> input,
                       const std::string& where) {
  if (window_id < 0 || window_id >= windows.size() ||
      windows.spec(static_cast<int>(window_id)).name != window)
    throw InfraError(where + ": tensor '" + param.name + "' is placed in window " +
                     std::to_string(window_id) + " '" + window + "', but the build has " +
                     std::to_string(windows.size()) + " window(s) and no such one at that index");
  const int id = static_cast<int>(window_id);
  const WindowSpec& spec = windows.spec(id);
  Tensor view = Tensor::borrow(windows.local(id), param.dtype, param.shape);
  if (!windows.local(id))
    throw InfraError(where + ": tensor '" + param.name + "' is placed in window '" + window +
                     "', of which this rank is not a member");
  if (spec.dtype != param.dtype || view.nbytes() > spec.bytes)
    throw InfraError(where + ": tensor '" + param.name + "' (" + param.type_string() + ", " +
                     std::to_string(view.nbytes()) + " bytes) does not fit window '" + window +
                     "' (" + dtype_name(spec.dtype) + ", " + std::to_string(spec.bytes) +
                     " bytes)");
  if (input) {
    if (input->size() != view.nbytes())
      throw InfraError(where + ": tensor '" + param.name + "' is " + param.type_string() + " (" +
                       std::to_string(view.nbytes()) + " bytes) but its data has " +
                       std::to_string(input->size()));
    if (!input->empty()) std::memcpy(view.data(), input->data(), input->size());
  }
  return view;
}

}  // namespace

struct AgentWorker::Build {
  fs::path dir;
  std::vector<wire::WireWindow> windows_spec;
  std::unique_ptr<WindowSet> windows;
  // Names and element sizes of `windows`, for the comm log's readers.
  std::shared_ptr<const CommWindows> comm_windows;
  bool ready = false;
  // Loaded and assembled once by prepare, so a dispatch neither re-reads the
  // sidecar nor re-checks the binary cache (kPreparePlatform's binaries).
  std::optional<KernelConfig> config;
  AssembledBinaries binaries;
  // Window id -> the resident tensor living in that window's first bytes.
  std::map<int64_t, uint64_t> occupants;
};

std::optional<WorkerJob> work_job_of(wire::Decoded& message) {
  const uint64_t request_id = message.envelope.request_id;
  if (auto* reset = std::get_if<wire::Reset>(&message.message))
    return ResetJob{request_id, reset->build};
  if (auto* dispatch = std::get_if<wire::Dispatch>(&message.message)) {
    DispatchJob job;
    job.request_id = request_id;
    job.dispatch = std::move(*dispatch);
    job.payloads = std::move(message.payloads);
    return job;
  }
  if (auto* resident = std::get_if<wire::Resident>(&message.message)) {
    ResidentJob job;
    job.request_id = request_id;
    job.op = std::move(*resident);
    job.payloads = std::move(message.payloads);
    return job;
  }
  return std::nullopt;
}

AgentWorker::AgentWorker(std::function<void()> notify)
    : notify_(std::move(notify)), session_future_(session_promise_.get_future()) {
  jobs_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (jobs_fd_ < 0) throw InfraError(std::string("eventfd: ") + std::strerror(errno));
}

AgentWorker::~AgentWorker() {
  if (thread_.joinable()) thread_.join();
  ::close(jobs_fd_);
}

void AgentWorker::start() {
  thread_ = std::thread([this] { main(); });
}

SessionInfo AgentWorker::wait_for_session() { return session_future_.get(); }

void AgentWorker::configure(WorkerSettings settings) {
  submit(ConfigureJob{std::move(settings)});
}

void AgentWorker::submit(WorkerJob job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
  }
  const uint64_t one = 1;
  const ssize_t written = write(jobs_fd_, &one, sizeof one);
  (void)written;  // EAGAIN only when the counter is huge: the worker is awake anyway
}

WorkerJob AgentWorker::next_job() {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!jobs_.empty()) {
        WorkerJob job = std::move(jobs_.front());
        jobs_.pop_front();
        return job;
      }
    }
    if (data_) {
      if (std::optional<wire::Decoded> message = data_->receive(std::chrono::milliseconds(0))) {
        if (std::optional<WorkerJob> job = work_job_of(*message)) return std::move(*job);
        throw wire::ProtocolError(where() + ": unexpected " +
                                  wire::message_type_name(message->type()) +
                                  " from the coordinator on the data connection");
      }
    }
    // Until a job is queued or a message arrives; the control thread ends this
    // process when the coordinator is gone, so no deadline is needed here.
    pollfd jobs{jobs_fd_, POLLIN, 0};
    if (data_) {
      data_->wait({&jobs, 1}, std::chrono::milliseconds(-1));
    } else if (::poll(&jobs, 1, -1) < 0 && errno != EINTR) {
      throw InfraError(where() + ": waiting for work: " + std::strerror(errno));
    }
    uint64_t count = 0;
    if (jobs.revents) (void)read(jobs_fd_, &count, sizeof count);
  }
}

void AgentWorker::apply(ConfigureJob& job) {
  settings_ = std::move(job.settings);
  if (!settings_.data) return;
  const DataConnection& data = *settings_.data;
  data_context_.emplace(1);
  const int rank = session_->rank();
  data_.emplace(wire::Channel::connect(*data_context_, data.endpoint, rank, data.options));
  // The first message on this connection: the coordinator reads it before any answer.
  data_->send(wire::Attach{rank, data.token});
}

std::vector<WorkerOutput> AgentWorker::take_outputs() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(outputs_, {});
}

void AgentWorker::post(WorkerOutput output) {
  if (output.kind == WorkerOutput::Kind::kSend && data_) {
    data_->send(*output.message, std::move(output.payloads), output.request_id);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    outputs_.push_back(std::move(output));
  }
  notify_();
}

std::string AgentWorker::where() const {
  return "rank " + std::to_string(session_ ? session_->rank() : -1);
}

void AgentWorker::main() {
  try {
    session_ = std::make_unique<MpiSession>();
    SessionInfo info;
    info.rank = session_->rank();
    info.world = session_->world();
    info.host = session_->host();
    info.thread_level = thread_level_name(session_->provided_thread_level());
    info.thread_multiple = session_->thread_multiple();
    info.thread_note = session_->thread_level_note();
    session_promise_.set_value(std::move(info));
  } catch (...) {
    session_promise_.set_exception(std::current_exception());
    return;
  }
  notify_();

  for (;;) {
    try {
      WorkerJob job = next_job();
      if (auto* configure_job = std::get_if<ConfigureJob>(&job)) {
        apply(*configure_job);
      } else if (auto* prepare_job = std::get_if<PrepareJob>(&job)) {
        prepare(*prepare_job);
      } else if (auto* reset_job = std::get_if<ResetJob>(&job)) {
        reset(*reset_job);
      } else if (auto* dispatch_job = std::get_if<DispatchJob>(&job)) {
        dispatch(*dispatch_job);
      } else if (auto* resident_job = std::get_if<ResidentJob>(&job)) {
        resident(*resident_job);
      } else {
        const bool clean = shutdown();
        // Nothing is owed on it (SHUTDOWN comes once every answer was read); its linger
        // bounds the close.
        data_.reset();
        data_context_.reset();
        WorkerOutput done;
        done.kind = WorkerOutput::Kind::kShutdownDone;
        done.clean = clean;
        post(std::move(done));
        return;
      }
    } catch (const std::exception& e) {
      // Jobs report their own failures; anything escaping is a failure of
      // the agent itself (MPI, the workspace), outside any dispatch.
      const int code = exit_code_of(e) == ExitCode::kFail ? 1 : 3;
      WorkerOutput fatal;
      fatal.kind = WorkerOutput::Kind::kFatal;
      fatal.message = wire::AgentError{session_->rank(), where() + ": " + e.what(), code};
      fatal.exit_code = code;
      post(std::move(fatal));
      return;
    }
  }
}

void AgentWorker::node_barrier() {
  MPI_Request request = MPI_REQUEST_NULL;
  {
    auto lock = session_->lock();
    check_mpi(MPI_Ibarrier(session_->node_comm(), &request), where() + ": MPI_Ibarrier(node)");
  }
  // Not latency-critical (a peer may still be compiling): sleep up to 2 ms
  // between polls so a long wait costs next to no CPU.
  Backoff::Options slow;
  slow.max_sleep = std::chrono::microseconds(2000);
  Backoff backoff(slow);
  const auto deadline = std::chrono::steady_clock::now() + settings_.node_barrier_timeout;
  for (;;) {
    int done = 0;
    {
      auto lock = session_->lock();
      check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), where() + ": MPI_Test(node barrier)");
    }
    if (done) return;
    if (backoff.past_spin() && std::chrono::steady_clock::now() >= deadline) {
      throw InfraError(where() + ": the other ranks of host " + session_->host() +
                       " did not reach the node barrier before materializing within " +
                       std::to_string(settings_.node_barrier_timeout.count() / 1000) +
                       " s; one of them is stuck or has failed");
    }
    backoff.pause();
  }
}

void AgentWorker::prepare(PrepareJob& job) {
  const wire::Manifest& manifest = job.manifest;
  const auto start = std::chrono::steady_clock::now();
  wire::Ready ready;
  ready.rank = session_->rank();
  std::optional<wire::WireError> failure;
  auto fail = [&](const std::exception& e, int code) {
    if (!failure)
      failure = wire::WireError{where() + ": build '" + manifest.build + "': " + e.what(), code};
  };

  auto& slot = builds_[manifest.build];
  if (!slot) slot = std::make_unique<Build>();
  Build& build = *slot;
  build.ready = false;
  build.dir = settings_.workspace / manifest.build;

  wire::BlobStore store(settings_.blob_store);
  try {
    for (size_t i = 0; i < job.hashes.size(); ++i) {
      const zmq::message_t& blob = job.blobs.at(i);
      store.put(job.hashes[i], {static_cast<const char*>(blob.data()), blob.size()});
    }
  } catch (const std::exception& e) {
    fail(e, 3);
  }
  job.blobs.clear();

  // The ranks of this node received disjoint parts of what the node needs.
  bool in_step = true;
  try {
    node_barrier();
  } catch (const std::exception& e) {
    in_step = false;  // the node's ranks are out of step: no collective from here on
    dirty_ = true;
    failure.reset();
    fail(e, 3);
  }

  if (!failure) {
    try {
      const std::vector<std::string> missing = store.missing(manifest);
      if (!missing.empty()) {
        std::string names;
        for (const auto& h : missing) {
          std::string path = "?";
          for (const auto& file : manifest.files)
            if (file.sha256 == h) path = file.path;
          names += (names.empty() ? "" : ", ") + path + " (sha256 " + h + ")";
        }
        throw InfraError(
            std::to_string(missing.size()) +
            " file(s) are in no blob store of this host after the node barrier: " + names +
            "; the coordinator shipped them to no rank of host " + session_->host());
      }
      const wire::MaterializeStats stats = store.materialize(manifest, build.dir);
      log::debug("build '{}': {} files linked, {} copied, {} unchanged, {} removed ({} bytes)",
                 manifest.build, stats.files_linked, stats.files_copied, stats.files_unchanged,
                 stats.files_removed, stats.bytes_written());
    } catch (const std::exception& e) {
      fail(e, 3);
    }
  }
  if (!failure) {
    try {
      build.config.reset();
      build.binaries.clear();
      const KernelConfig config = KernelConfig::load(build.dir);
      std::vector<std::string> sources;
      for (const auto& o : config.orchestrations) sources.push_back(o.source);
      for (const auto& k : config.kernels) sources.push_back(k.source);
      std::sort(sources.begin(), sources.end());
      sources.erase(std::unique(sources.begin(), sources.end()), sources.end());
      const std::string arch = arch_name(parse_platform(kPreparePlatform).arch);
      AssembleOptions::Stats stats;
      AssembleOptions options;
      options.platform = kPreparePlatform;
      options.arch = arch;
      options.store_dir = settings_.binary_store;
      options.stats = &stats;
      build.binaries = assemble(build.dir, sources, options);
      build.config = config;
      ready.cache_hits = stats.cached;
      ready.compiles = stats.compiled;
    } catch (const std::exception& e) {
      ready.cache_hits = ready.compiles = 0;
      fail(e, exit_code_of(e) == ExitCode::kFail ? 1 : 3);
    }
  }

  // Window creation is collective over the world: take part even after a
  // failure above, so the other ranks do not wait for this one in vain.
  try {
    if (in_step && (!build.windows || build.windows_spec != manifest.windows)) {
      if (build.windows) {
        evict_all(build);
        build.windows.reset();
        std::erase(build_order_, manifest.build);
      }
      build.windows = std::make_unique<WindowSet>(*session_, window_specs(manifest.windows));
      build.comm_windows = std::make_shared<const CommWindows>(comm_windows(*build.windows));
      build.windows_spec = manifest.windows;
      build_order_.push_back(manifest.build);
    }
  } catch (const std::exception& e) {
    dirty_ = true;
    build.windows.reset();
    build.windows_spec.clear();
    fail(e, exit_code_of(e) == ExitCode::kFail ? 1 : 3);
  }

  if (failure) {
    ready.ok = false;
    ready.error = *failure;
    ready.cache_hits = ready.compiles = 0;
    log::error("{}", failure->message);
  } else {
    build.ready = true;
    ready.ok = true;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    log::info(
        "build '{}' ready in {} ms: {} files, {} windows, {} binaries from the cache, {} "
        "compiled",
        manifest.build, ms, manifest.files.size(), manifest.windows.size(), ready.cache_hits,
        ready.compiles);
  }
  WorkerOutput out;
  out.message = ready;
  out.request_id = job.request_id;
  post(std::move(out));
}

void AgentWorker::reset(const ResetJob& job) {
  wire::Ready ready;
  ready.rank = session_->rank();
  auto it = builds_.find(job.build);
  if (it == builds_.end() || !it->second->windows) {
    // Every rank got the same MANIFESTs, so no rank is in the collective either.
    ready.error = {where() + ": RESET of build '" + job.build +
                       "', whose windows this agent does not hold (no MANIFEST for it)",
                   3};
  } else {
    try {
      zero_windows(*it->second);
      ready.ok = true;
    } catch (const std::exception& e) {
      ready.error = {where() + ": RESET of build '" + job.build + "': " + e.what(),
                     exit_code_of(e) == ExitCode::kFail ? 1 : 3};
    }
  }
  if (!ready.ok) log::error("{}", ready.error.message);
  WorkerOutput out;
  out.message = ready;
  out.request_id = job.request_id;
  post(std::move(out));
}

void AgentWorker::zero_windows(Build& build) {
  try {
    // Resident tensors living in a window are data, not scratch: kept.
    std::map<int, size_t> kept;
    for (const auto& [window, id] : build.occupants)
      kept[static_cast<int>(window)] = residents_.at(id).data.nbytes();
    build.windows->reset(kept);
  } catch (...) {
    dirty_ = true;  // the ranks may have met in one barrier and not in the other
    throw;
  }
}

void AgentWorker::dispatch(DispatchJob& job) {
  const wire::Dispatch& d = job.dispatch;
  const int rank = session_->rank();
  wire::DispatchDone done;
  done.index = d.index;
  done.start_unix_ns = realtime_ns();
  std::vector<zmq::message_t> frames;
  bool kernels_started = false;
  try {
    auto it = builds_.find(d.build);
    if (it == builds_.end() || !it->second->ready || !it->second->windows)
      throw InfraError("dispatch d" + std::to_string(d.index) + " of program '" + d.program +
                       "' names build '" + d.build +
                       "', which this agent has not prepared (no READY ok for it)");
    Build& build = *it->second;
    // Its errors name the "window reset" (WindowSet::reset).
    if (d.reset_windows) zero_windows(build);

    std::vector<ParamInfo> params;
    std::vector<Tensor> tensors;
    std::vector<bool> returned;   // by tensor: its bytes go back in DISPATCH_DONE
    std::vector<bool> in_window;  // by tensor: a view of a window's copy
    // In-place arguments bound to resident tensors: (window view, resident part),
    // copied back into the resident part after the run.
    std::vector<std::pair<Tensor, Tensor>> write_back;
    DispatchContext context;
    size_t frame = 0;
    std::set<int64_t> placed;  // windows holding an in-place argument

    // A resident part living in a window this dispatch uses for anything but
    // that part moves back to its own buffer first (kernels may write there).
    std::map<int64_t, std::optional<uint64_t>> window_use;  // window -> resident placed whole
    for (const wire::DispatchArg& arg : d.args) {
      if (arg.window_id < 0) continue;
      std::optional<uint64_t>& use = window_use[arg.window_id];
      if (arg.kind == wire::DispatchArg::kResident && !use && whole_part(arg))
        use = arg.resident_id;
    }
    for (const auto& [window, use] : window_use) {
      auto occupant = build.occupants.find(window);
      if (occupant != build.occupants.end() && use != occupant->second) evict(build, window);
    }
    for (size_t i = 0; i < d.args.size(); ++i) {
      const wire::DispatchArg& arg = d.args[i];
      if (arg.kind == wire::DispatchArg::kTensor || arg.kind == wire::DispatchArg::kResident) {
        ParamInfo param;
        param.name = arg.tensor.name;
        param.direction = parse_direction(arg.tensor.direction).value_or(Direction::kIn);
        param.shape = arg.tensor.shape;
        param.dtype = parse_dtype(arg.tensor.dtype).value_or(DType::kF32);
        const std::string what = "dispatch d" + std::to_string(d.index) + " of program '" +
                                 d.program + "': tensor '" + param.name + "'";
        Tensor tensor;
        if (arg.window_id >= 0) {
          // In place (docs/build-directory.md): the data lives in the window's copy.
          const std::string where =
              "dispatch d" + std::to_string(d.index) + " of program '" + d.program + "'";
          if (!placed.insert(arg.window_id).second)
            throw InfraError(where + ": argument " + std::to_string(i) + " ('" + param.name +
                             "') is placed in window '" + arg.window +
                             "', which already holds another argument of the dispatch");
          std::optional<std::span<const std::byte>> input;
          Tensor resident;  // packed: its bytes go into the window, and back after the run
          if (arg.kind == wire::DispatchArg::kResident &&
              window_use[arg.window_id] == arg.resident_id) {
            // The whole part (whole_part checked it): it moves into the window and stays there.
            ResidentPart& part = residents_.at(arg.resident_id);
            if (part.build == d.build && part.window == arg.window_id) {
              tensor = place_in_window(*build.windows, arg.window_id, arg.window, param,
                                       std::nullopt, where);
            } else {
              if (param.is_input()) input = part.data.bytes();
              tensor = place_in_window(*build.windows, arg.window_id, arg.window, param, input,
                                       where);
              if (part.window >= 0) builds_.at(part.build)->occupants.erase(part.window);
              part.data = tensor;
              part.build = d.build;
              part.window = arg.window_id;
              build.occupants[arg.window_id] = arg.resident_id;
            }
          } else if (arg.kind == wire::DispatchArg::kResident) {
            resident = resident_box(arg, what);
            if (param.is_input()) {
              const Tensor packed = resident.is_contiguous() ? resident : resident.contiguous();
              input = packed.bytes();
              tensor = place_in_window(*build.windows, arg.window_id, arg.window, param, input,
                                       where);
            } else {
              tensor = place_in_window(*build.windows, arg.window_id, arg.window, param,
                                       std::nullopt, where);
            }
            if (param.is_output()) write_back.emplace_back(tensor, resident);
          } else {
            if (param.is_input()) {
              const zmq::message_t& bytes = job.payloads.at(frame++);
              input = std::span<const std::byte>(static_cast<const std::byte*>(bytes.data()),
                                                 bytes.size());
            }
            tensor = place_in_window(*build.windows, arg.window_id, arg.window, param, input,
                                     where);
          }
          in_window.push_back(true);
        } else if (arg.kind == wire::DispatchArg::kResident) {
          tensor = resident_box(arg, what);  // the kernel works on the resident data itself
          in_window.push_back(false);
        } else if (param.is_input()) {
          zmq::message_t& bytes = job.payloads.at(frame++);
          const size_t nbytes =
              static_cast<size_t>(param.numel().value_or(0)) * dtype_size(param.dtype);
          if (bytes.size() != nbytes)
            throw InfraError(what + " is " + param.type_string() + " (" + std::to_string(nbytes) +
                             " bytes) but its payload has " + std::to_string(bytes.size()));
          tensor = wire::tensor_of_frame(std::move(bytes), param.dtype, param.shape);
          in_window.push_back(false);
        } else {
          tensor = Tensor::empty(param.dtype, param.shape);  // zero-filled
          in_window.push_back(false);
        }
        returned.push_back(arg.kind == wire::DispatchArg::kTensor);
        params.push_back(std::move(param));
        tensors.push_back(std::move(tensor));
      } else if (arg.kind == wire::DispatchArg::kWindow) {
        const auto& windows = build.windows->kernel_windows();
        if (arg.window_id < 0 || arg.window_id >= static_cast<int64_t>(windows.size()) ||
            build.windows->spec(static_cast<int>(arg.window_id)).name != arg.window)
          throw InfraError("dispatch d" + std::to_string(d.index) + " of program '" + d.program +
                           "': argument " + std::to_string(i) + " is window " +
                           std::to_string(arg.window_id) + " '" + arg.window + "', but build '" +
                           d.build + "' has " + std::to_string(windows.size()) +
                           " window(s) and no such one at that index");
        context.windows.push_back(windows[static_cast<size_t>(arg.window_id)]);
      } else {
        context.scalars.push_back(arg.scalar);
      }
    }
    job.payloads.clear();

    const RunConfig config = run_config_of(d.run, d.dfx);
    const CompiledProgram program =
        build.config ? CompiledProgram::from_sub_build(build.dir, *build.config, d.program,
                                                       std::move(params), config.platform(),
                                                       arch_name(config.arch))
                     : CompiledProgram::from_sub_build(build.dir, d.program, std::move(params),
                                                       config.platform(), arch_name(config.arch));
    if (!chip_ || chip_->config() != config) {
      chip_.reset();
      chip_ = std::make_unique<ChipWorker>(config, core_counts_for(session_->node_size()));
    }
    if (build.config && config.platform() == kPreparePlatform) context.binaries = &build.binaries;
    CommState comm_state(*build.windows, d.run.wait_timeout_ms
                                             ? std::chrono::milliseconds(d.run.wait_timeout_ms)
                                             : settings_.wait_timeout);
    context.rank = rank;
    context.world = session_->world();
    context.comm = comm_api();
    context.dispatch_timeout = d.run.dispatch_timeout_ms
                                   ? std::chrono::milliseconds(d.run.dispatch_timeout_ms)
                                   : chip::RuntimeConfig{}.dispatch_timeout;
    activity_.dispatch_started(static_cast<int64_t>(d.index), d.program, build.comm_windows,
                               *context.dispatch_timeout);
    comm_state.set_log(&activity_.comm_log());
    context.comm_state = &comm_state;
    context.task_board = &activity_.board();
    context.dfx_dir = build.dir / "dfx" / ("d" + std::to_string(d.index));
    context.binary_store = settings_.binary_store;
    // ChipWorker::run empties dfx_dir itself when DFX is on; with it off nothing is
    // written or shipped, so a dispatch makes no file-system call for it.

    kernels_started = true;
    const ChipRunResult result = chip_->run(program, tensors, context);
    for (auto& [window_view, resident] : write_back) resident.copy_from(window_view);
    done.timings.push_back({"assemble", static_cast<int64_t>(result.assemble_ms * 1e6)});
    done.timings.push_back({"run", static_cast<int64_t>(result.run_ms * 1e6)});

    for (size_t i = 0; i < tensors.size(); ++i) {
      const ParamInfo& param = program.params()[i];
      if (!param.is_output() || !returned[i]) continue;
      wire::TensorMeta meta;
      meta.name = param.name;
      meta.dtype = dtype_name(param.dtype);
      meta.shape = tensors[i].shape();
      meta.direction = direction_name(param.direction);
      meta.nbytes = tensors[i].nbytes();
      // A window's copy changes with the next dispatch, maybe before ZeroMQ has
      // sent the frame: send a copy of it; other tensors are this dispatch's own.
      frames.push_back(wire::frame_of_tensor(in_window[i] ? tensors[i].contiguous() : tensors[i]));
      done.outputs.push_back(std::move(meta));
    }
    if (result.dfx_dir) {
      if (config.enable_chip_swimlane > 0)
        write_file_atomic(*result.dfx_dir / "comm_ops.json",
                          comm_ops_json(activity_.comm_log(), *build.comm_windows, rank).dump() + "\n");
      for (const std::string& file : files_under(*result.dfx_dir)) {
        frames.push_back(wire::frame_of(read_file(*result.dfx_dir / file)));
        done.dfx_files.push_back(file);
      }
    }
    done.ok = true;
    if (kernels_started) activity_.dispatch_ended(true, "");
  } catch (const std::exception& e) {
    // A kernel that failed may have left this rank out of step with its
    // peers (a pending barrier, a peer still waiting for a notify).
    if (kernels_started) dirty_ = true;
    frames.clear();
    done.outputs.clear();
    done.dfx_files.clear();
    std::string message = e.what();
    const std::string prefix = "rank " + std::to_string(rank) + ":";
    if (message.rfind(prefix, 0) != 0) message = prefix + " " + message;
    done.ok = false;
    done.error = {message, wire_exit_code(e)};
    if (kernels_started) activity_.dispatch_ended(false, message);
    // The coordinator reports it, with every rank's state (docs/dfx.md "Why a run hangs").
    log::info("dispatch d{} of program '{}' failed: {}", d.index, d.program, message);
  }
  done.end_unix_ns = realtime_ns();
  WorkerOutput out;
  out.message = std::move(done);
  out.payloads = std::move(frames);
  out.request_id = job.request_id;
  post(std::move(out));
}

void AgentWorker::resident(ResidentJob& job) {
  const wire::Resident& op = job.op;
  wire::ResidentDone done;
  done.id = op.id;
  std::vector<zmq::message_t> frames;
  const std::string what = where() + ": resident tensor " + std::to_string(op.id);
  try {
    if (op.op == wire::Resident::kAlloc) {
      if (residents_.count(op.id)) throw InfraError(what + " is already allocated");
      const DType dtype = parse_dtype(op.dtype).value_or(DType::kF32);  // the decoder checked it
      residents_.emplace(op.id, ResidentPart{Tensor::empty(dtype, op.shape), {}, -1});
    } else {
      auto it = residents_.find(op.id);
      if (it == residents_.end())
        throw InfraError(what + " is not allocated on this rank (freed, or never allocated)");
      Tensor& part = it->second.data;
      if (op.op == wire::Resident::kWrite) {
        const zmq::message_t& bytes = job.payloads.at(0);
        if (bytes.size() != part.nbytes())
          throw InfraError(what + " is " + part.describe() + " (" + std::to_string(part.nbytes()) +
                           " bytes), the data written to it is " + std::to_string(bytes.size()) +
                           " bytes");
        if (bytes.size()) std::memcpy(part.data(), bytes.data(), bytes.size());
      } else if (op.op == wire::Resident::kRead) {
        // A copy: a dispatch queued behind this read may write the part while
        // ZeroMQ still sends it.
        const auto bytes = part.bytes();
        frames.push_back(wire::frame_of({reinterpret_cast<const char*>(bytes.data()), bytes.size()}));
        done.has_data = true;
        done.nbytes = bytes.size();
      } else {
        if (it->second.window >= 0) builds_.at(it->second.build)->occupants.erase(it->second.window);
        residents_.erase(it);
      }
    }
    done.ok = true;
  } catch (const std::exception& e) {
    frames.clear();
    done.has_data = false;
    done.nbytes = 0;
    done.error = {e.what(), 3};
    log::error("{}", done.error.message);
  }
  job.payloads.clear();
  WorkerOutput out;
  out.message = std::move(done);
  out.payloads = std::move(frames);
  out.request_id = job.request_id;
  post(std::move(out));
}

Tensor AgentWorker::resident_box(const wire::DispatchArg& arg, const std::string& what) const {
  auto it = residents_.find(arg.resident_id);
  if (it == residents_.end())
    throw InfraError(what + " is bound to resident tensor " + std::to_string(arg.resident_id) +
                     ", which is not allocated on " + where());
  const Tensor& part = it->second.data;
  const DType dtype = parse_dtype(arg.tensor.dtype).value_or(DType::kF32);
  bool inside = dtype == part.dtype() && arg.offsets.size() == part.shape().size() &&
                arg.tensor.shape.size() == part.shape().size();
  for (size_t d = 0; inside && d < arg.offsets.size(); ++d)
    inside = arg.offsets[d] >= 0 && arg.tensor.shape[d] >= 0 &&
             arg.offsets[d] + arg.tensor.shape[d] <= part.shape()[d];
  if (!inside)
    throw InfraError(what + ": the box " + dtype_name(dtype) + shape_string(arg.tensor.shape) +
                     " at " + shape_string(arg.offsets) + " does not lie inside resident tensor " +
                     std::to_string(arg.resident_id) + "'s part " + part.describe() + " on " +
                     where());
  return part.slice(arg.offsets, arg.tensor.shape);
}

bool AgentWorker::whole_part(const wire::DispatchArg& arg) const {
  auto it = residents_.find(arg.resident_id);
  if (it == residents_.end()) return false;
  const Tensor& part = it->second.data;
  return arg.tensor.shape == part.shape() && part.is_contiguous() &&
         std::all_of(arg.offsets.begin(), arg.offsets.end(), [](int64_t o) { return o == 0; }) &&
         parse_dtype(arg.tensor.dtype) == part.dtype();
}

void AgentWorker::evict(Build& build, int64_t window) {
  auto occupant = build.occupants.find(window);
  if (occupant == build.occupants.end()) return;
  ResidentPart& part = residents_.at(occupant->second);
  Tensor own = Tensor::empty(part.data.dtype(), part.data.shape());
  own.copy_from(part.data);
  part = ResidentPart{std::move(own), {}, -1};
  build.occupants.erase(occupant);
}

void AgentWorker::evict_all(Build& build) {
  while (!build.occupants.empty()) evict(build, build.occupants.begin()->first);
}

bool AgentWorker::shutdown() {
  chip_.reset();  // joins the core threads
  residents_.clear();
  if (dirty_) {
    log::warn(
        "skipping the collective teardown (windows, MPI_Finalize) after an earlier "
        "failure: the other ranks may not be able to join it");
    return false;
  }
  // Window sets are freed collectively, in the same order on every rank.
  for (const std::string& name : build_order_) builds_[name]->windows.reset();
  builds_.clear();
  session_.reset();  // MPI_Finalize
  return true;
}

}  // namespace pypto::rank
