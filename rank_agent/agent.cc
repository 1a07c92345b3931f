#include "rank_agent/agent.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>

#include "common/boot_id.h"
#include "common/heap.h"
#include "common/log.h"
#include "common/pause_log.h"
#include "common/seconds_text.h"
#include "common/subprocess.h"
#include "orchestration/dispatch_record.h"
#include "pypto/error.h"
#include "rank_agent/cpu_placement.h"

namespace pypto::rank {

namespace {

// HELLO's held_hashes is a hint; a big store sends a bounded subset.
constexpr size_t kMaxHeldHashes = 4096;
// Floor for a WELCOME's heartbeat interval, so a 0 cannot make the loop spin.
constexpr std::chrono::milliseconds kMinHeartbeat{10};
// How long after a dispatch's deadline the control thread ends a dispatch the
// runtime could not fail itself: long enough for the runtime's own failure,
// when it can report one, to arrive first.
constexpr std::chrono::milliseconds kDispatchGrace{1000};

volatile sig_atomic_t g_signal = 0;
int g_wake_fd = -1;

void on_signal(int signo) {
  g_signal = signo;
  // The agent is going: a compile it runs (with its cc1plus) goes first.
  kill_subprocess_groups();
  if (g_wake_fd >= 0) {
    const uint64_t one = 1;
    const ssize_t written = write(g_wake_fd, &one, sizeof one);  // async-signal-safe
    (void)written;
  }
}

void install_signal_handlers(int wake_fd) {
  g_wake_fd = wake_fd;
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: interrupt the poll at once
  for (int signo : {SIGTERM, SIGINT, SIGHUP}) sigaction(signo, &action, nullptr);
}

const char* signal_name(int signo) {
  switch (signo) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGHUP:
      return "SIGHUP";
  }
  return "a signal";
}

// "tcp://*:5555" for the hint, from the port of the address the agent was given.
std::string bind_hint(const std::string& coord) {
  const auto colon = coord.rfind(':');
  if (coord.rfind("tcp://", 0) == 0 && colon != std::string::npos && colon > 5)
    return "tcp://*:" + coord.substr(colon + 1);
  return coord;
}

}  // namespace

RankAgent::RankAgent(AgentOptions options) : options_(std::move(options)) {}

RankAgent::~RankAgent() = default;

int RankAgent::run() {
  try {
    run_key_ = wire::agent_key_from_env();
  } catch (const std::exception&) {
    run_key_error_ = std::current_exception();
  }
  ::unsetenv(wire::kRunKeyEnv);
  ::unsetenv(wire::kRunKeyFileEnv);
  try {
    start_mpi();
    say_hello();
    await_welcome();
    return control_loop();
  } catch (const std::exception& e) {
    const ExitCode code = exit_code_of(e);
    fail_now(code == ExitCode::kFail ? 1 : static_cast<int>(code), e.what(), welcomed_);
  }
}

void RankAgent::start_mpi() {
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) throw InfraError(std::string("eventfd: ") + std::strerror(errno));
  worker_ = std::make_unique<AgentWorker>([fd = wake_fd_] {
    const uint64_t one = 1;
    const ssize_t written = write(fd, &one, sizeof one);
    (void)written;
  });
  // MPI lives on the worker thread: every MPI call of the agent is made there.
  worker_->start();
  session_ = worker_->wait_for_session();
  log::set_prefix("[rank " + std::to_string(session_.rank) + "]");
  if (!session_.thread_multiple) log::info("MPI thread level: {}", session_.thread_note);
  // After MPI_Init, so that these handlers are the ones in force.
  install_signal_handlers(wake_fd_);
}

void RankAgent::say_hello() {
  paths_ = resolve_agent_paths(options_, "");  // the blob store does not depend on the run
  blob_store_.emplace(paths_.blob_store);
  wire::Hello hello;
  hello.rank = session_.rank;
  hello.world = session_.world;
  hello.host = session_.host;
  hello.pid = getpid();
  hello.held_hashes = blob_store_->list();
  if (hello.held_hashes.size() > kMaxHeldHashes) hello.held_hashes.resize(kMaxHeldHashes);
  hello.mpi_thread_level = session_.thread_level;
  hello.boot_id = kernel_boot_id();
  if (run_key_error_) std::rethrow_exception(run_key_error_);
  wire::ChannelOptions channel_options;
  channel_options.curve_client = run_key_;
  channel_.emplace(
      wire::Channel::connect(context_, options_.coord, session_.rank, channel_options));
  send(hello, {}, 1);
  log::debug("HELLO sent to {} (world {}, host {}, {} held blobs)", options_.coord, session_.world,
             session_.host, hello.held_hashes.size());
}

void RankAgent::wait_for_activity(Clock::duration timeout) {
  pollfd wake{wake_fd_, POLLIN, 0};
  // Round up: a sub-millisecond remainder must still sleep, not spin.
  const auto ms =
      std::max(std::chrono::ceil<std::chrono::milliseconds>(timeout), std::chrono::milliseconds(0));
  channel_->wait({&wake, 1}, ms);
}

void RankAgent::await_welcome() {
  const auto deadline = Clock::now() + options_.connect_timeout;
  for (;;) {
    drain_wakeups();
    check_signal();
    while (auto message = channel_->receive(std::chrono::milliseconds(0))) {
      if (message->is<wire::Refuse>())
        throw InfraError(
            "rank " + std::to_string(session_.rank) +
            ": the coordinator refused this agent: " + message->as<wire::Refuse>().reason);
      if (message->is<wire::Heartbeat>()) continue;
      if (auto* abort = std::get_if<wire::Abort>(&message->message)) {
        std::cerr << "pypto-rank: rank " << session_.rank
                  << ": aborted by the coordinator: " << abort->reason << std::endl;
        exit_now(1);
      }
      welcome_ = message->as<wire::Welcome>();  // anything else: ProtocolError naming it
      welcomed_ = true;
      break;
    }
    if (welcomed_) break;
    const auto now = Clock::now();
    if (now >= deadline)
      throw InfraError("rank " + std::to_string(session_.rank) + ": no coordinator answered at " +
                       options_.coord + " within " + seconds_text(options_.connect_timeout) +
                       " s; start pypto-coord run <dir> --agents external --bind " +
                       bind_hint(options_.coord) + " first, or check the address and that " +
                       wire::kRunKeyEnv + " is the key of that coordinator's run (a peer " +
                       "with another key is refused without an answer)");
    wait_for_activity(deadline - now);
  }

  paths_ = resolve_agent_paths(options_, welcome_.run_id);
  workspace_ = paths_.workspace_parent / ("rank" + std::to_string(session_.rank));
  std::error_code ec;
  fs::create_directories(workspace_, ec);
  if (ec)
    throw InfraError("rank " + std::to_string(session_.rank) + ": cannot create the workspace " +
                     workspace_.string() + ": " + ec.message() + "; pass --workspace DIR");
  fs::create_directories(paths_.binary_store, ec);
  if (ec)
    throw InfraError("rank " + std::to_string(session_.rank) + ": cannot create the binary store " +
                     paths_.binary_store.string() + ": " + ec.message() +
                     "; pass --binary-store DIR");
  WorkerSettings settings;
  settings.blob_store = paths_.blob_store;
  settings.binary_store = paths_.binary_store;
  settings.workspace = workspace_;
  settings.wait_timeout = options_.wait_timeout;
  if (welcome_.attach_token != 0) {
    DataConnection data;
    data.endpoint = options_.coord;
    data.options.curve_client = run_key_;
    data.token = welcome_.attach_token;
    settings.data = std::move(data);
  }
  worker_->configure(std::move(settings));
  log::info("welcomed to run {} (heartbeat {} ms, deadline {} ms); workspace {}", welcome_.run_id,
            welcome_.heartbeat_interval_ms, welcome_.deadline_ms, workspace_.string());
}

int RankAgent::control_loop() {
  const std::chrono::milliseconds heartbeat =
      std::max(std::chrono::milliseconds(welcome_.heartbeat_interval_ms), kMinHeartbeat);
  // deadline_ms 0: the coordinator asks for no silence check (ten years is never).
  const std::chrono::milliseconds deadline = welcome_.deadline_ms
                                                 ? std::chrono::milliseconds(welcome_.deadline_ms)
                                                 : std::chrono::hours(24 * 3650);
  last_heard_ = Clock::now();
  // One turn sleeps at most `heartbeat`; as much again is slack for a busy machine.
  PauseLog pauses(2 * heartbeat);
  for (;;) {
    pauses.tick(Clock::now());
    drain_wakeups();
    check_signal();
    if (auto code = flush_worker_outputs()) return *code;
    while (auto message = channel_->receive(std::chrono::milliseconds(0))) {
      last_heard_ = Clock::now();
      handle(*message);
    }
    const auto now = Clock::now();
    // A freeze of this host stopped the coordinator too: it does not count.
    const auto paused = pauses.paused_since(last_heard_);
    if (now - last_heard_ - paused >= deadline) {
      using std::chrono::duration_cast;
      using std::chrono::milliseconds;
      const auto silent = duration_cast<milliseconds>(now - last_heard_);
      std::string message = "lost the coordinator at " + options_.coord + ": silent for " +
                            seconds_text(silent) + " s (its deadline is " +
                            seconds_text(deadline) + " s";
      if (paused.count() > 0)
        message += "; not counting " + seconds_text(duration_cast<milliseconds>(paused)) +
                   " s during which this process did not run";
      // Kernels may be blocked: no teardown, no goodbye to a peer that is gone.
      fail_now(3, message + ")", false);
    }
    if (now - last_sent_ >= heartbeat) send(wire::Heartbeat{});
    // The runtime fails a dispatch at its deadline, unless the thread that would
    // is the stuck one (a lone task runs on the worker thread): then this does,
    // a moment later.
    auto next_check = std::min(last_sent_ + heartbeat, last_heard_ + paused + deadline);
    if (auto dispatch_deadline = worker_->activity().deadline_ns()) {
      const int64_t now_ns = chip::now_ns();
      if (auto overdue = worker_->activity().overdue(now_ns, kDispatchGrace))
        fail_now(1, *overdue, true);
      next_check = std::min(next_check, now + std::chrono::nanoseconds(*dispatch_deadline - now_ns) +
                                            kDispatchGrace);
    }
    wait_for_activity(next_check - Clock::now());
  }
}

void RankAgent::handle(wire::Decoded& message) {
  const uint64_t request_id = message.envelope.request_id;
  const std::string me = "rank " + std::to_string(session_.rank);
  if (message.is<wire::Heartbeat>()) return;
  if (auto* probe = std::get_if<wire::ClockProbe>(&message.message)) {
    // Answered at once from the control thread: the reply time is the clock reading.
    timespec mono{};
    timespec real{};
    ::clock_gettime(CLOCK_MONOTONIC, &mono);
    ::clock_gettime(CLOCK_REALTIME, &real);
    wire::ClockReply reply;
    reply.coordinator_ns = probe->coordinator_ns;
    reply.agent_ns = static_cast<int64_t>(mono.tv_sec) * 1'000'000'000 + mono.tv_nsec;
    reply.agent_unix_ns = static_cast<int64_t>(real.tv_sec) * 1'000'000'000 + real.tv_nsec;
    send(reply, {}, request_id);
    return;
  }
  if (message.is<wire::StateQuery>()) {
    // From the control thread, whatever the kernels do: that is the point.
    send(worker_->activity().snapshot(), {}, request_id);
    return;
  }
  if (shutting_down_) {
    log::warn("ignoring {} after SHUTDOWN", wire::message_type_name(message.type()));
    return;
  }
  if (auto* manifest = std::get_if<wire::Manifest>(&message.message)) {
    if (manifest->rank != session_.rank)
      throw wire::ProtocolError(me + ": received the MANIFEST of rank " +
                                std::to_string(manifest->rank) + " (build '" + manifest->build +
                                "')");
    wire::Need need;
    need.hashes = blob_store_->missing(*manifest);
    log::debug("MANIFEST of build '{}': {} files, {} blobs needed", manifest->build,
               manifest->files.size(), need.hashes.size());
    send(need, {}, request_id);
    pending_manifests_.push_back(std::move(*manifest));
  } else if (auto* blobs = std::get_if<wire::Blobs>(&message.message)) {
    // BLOBS answers the oldest MANIFEST still waiting for its files.
    if (pending_manifests_.empty())
      throw wire::ProtocolError(me + ": received BLOBS with no MANIFEST waiting for them");
    PrepareJob job;
    job.request_id = request_id;
    job.manifest = std::move(pending_manifests_.front());
    pending_manifests_.pop_front();
    job.hashes = std::move(blobs->hashes);
    job.blobs = std::move(message.payloads);
    // The kernels this build compiles share the prepare deadline.
    if (options_.prepare_timeout)
      set_subprocess_deadline(Clock::now() + *options_.prepare_timeout);
    worker_->submit(std::move(job));
  } else if (std::optional<WorkerJob> job = work_job_of(message)) {
    // Before the coordinator has the worker's ATTACH, work comes this way.
    worker_->submit(std::move(*job));
  } else if (auto* abort = std::get_if<wire::Abort>(&message.message)) {
    // The coordinator reports the failure once, for every rank.
    log::info("aborted by the coordinator: {}", abort->reason);
    exit_now(1);
  } else if (message.is<wire::Shutdown>()) {
    shutting_down_ = true;
    worker_->submit(ShutdownJob{});
  } else {
    throw wire::ProtocolError(me + ": unexpected " + wire::message_type_name(message.type()) +
                              " from the coordinator");
  }
}

void RankAgent::send(const wire::Message& message, std::vector<zmq::message_t> payloads,
                     uint64_t request_id) {
  channel_->send(message, std::move(payloads), request_id);
  last_sent_ = Clock::now();
}

void RankAgent::drain_wakeups() {
  uint64_t count = 0;
  while (read(wake_fd_, &count, sizeof count) == static_cast<ssize_t>(sizeof count)) {
  }
}

void RankAgent::check_signal() {
  const int signo = g_signal;
  if (!signo) return;
  const std::string message =
      "rank " + std::to_string(session_.rank) + ": stopped by " + signal_name(signo);
  // Once HELLO is out the coordinator knows this rank: tell it why it goes.
  fail_now(128 + signo, message, channel_.has_value());
}

std::optional<int> RankAgent::flush_worker_outputs() {
  for (WorkerOutput& out : worker_->take_outputs()) {
    switch (out.kind) {
      case WorkerOutput::Kind::kSend:
        send(*out.message, std::move(out.payloads), out.request_id);
        break;
      case WorkerOutput::Kind::kFatal: {
        const auto& error = std::get<wire::AgentError>(*out.message);
        fail_now(out.exit_code, error.message, true);
      }
      case WorkerOutput::Kind::kShutdownDone:
        return finish_shutdown(out.clean);
    }
  }
  return std::nullopt;
}

int RankAgent::finish_shutdown(bool clean) {
  remove_workspace();
  log::info("shut down by the coordinator");
  // MPI was left initialized after a failure: leave without exit-time destructors.
  if (!clean) exit_now(0);
  worker_.reset();  // its thread has returned
  channel_.reset();
  context_.close();
  return 0;
}

void RankAgent::remove_workspace() {
  if (options_.keep_workspace || workspace_.empty()) return;
  std::error_code ec;
  fs::remove_all(workspace_, ec);
  if (ec) log::warn("cannot remove the workspace {}: {}", workspace_.string(), ec.message());
  // The default per-run directory goes too once the last rank of the host has left.
  if (!options_.workspace) fs::remove(paths_.workspace_parent, ec);
}

void RankAgent::fail_now(int code, const std::string& message, bool tell_coordinator) {
  std::string text = message;
  const std::string prefix = "rank " + std::to_string(session_.rank) + ":";
  if (worker_ && text.rfind(prefix, 0) != 0) text = prefix + " " + text;
  std::cerr << "pypto-rank: error: " << text << std::endl;
  if (tell_coordinator && channel_) {
    try {
      send(wire::AgentError{session_.rank, text, code});
    } catch (const std::exception& e) {
      std::cerr << "pypto-rank: cannot tell the coordinator: " << e.what() << std::endl;
    }
  }
  // A failed run leaves nothing behind either (--keep-workspace keeps it).
  remove_workspace();
  exit_now(code);
}

void RankAgent::exit_now(int code) {
  // No compiler of this agent outlives it (their process groups are not ours).
  kill_subprocess_groups();
  log::logger().flush();
  std::fflush(stdout);
  std::fflush(stderr);
  // Closing the socket and the context lets a final AGENT_ERROR leave (the
  // socket's linger bounds the wait); nothing else is torn down.
  channel_.reset();
  context_.close();
  _exit(code);
}

int pypto_rank_main(int argc, char** argv) {
  keep_large_blocks_in_heap();  // a dispatch's tensors reuse the last one's pages
  AgentOptions options;
  try {
    bool help = false;
    options = parse_agent_options(argc, argv, &help);
    if (help) return 0;
    if (options.version) {
      std::cout << agent_version_text() << std::endl;
      return 0;
    }
    log::init(options.log_level);
    const std::string placement = place_on_cpus();  // before any thread starts: they inherit it
    log::debug("cpu placement: {}", placement);
  } catch (const std::exception& e) {
    std::cerr << "pypto-rank: error: " << e.what() << std::endl;
    return static_cast<int>(exit_code_of(e));
  }
  RankAgent agent(std::move(options));
  return agent.run();
}

}  // namespace pypto::rank
