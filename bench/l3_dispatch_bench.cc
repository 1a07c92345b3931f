// Dispatch round trip of the L3 runtime against a raw ZeroMQ round trip, in
// the same run (docs/performance.md, "L3 runtime"). Target: runtime <= 2x raw.
//
// Runtime: a DistributedWorker prepared once with an empty_w<W> bench build
// (tests/fixtures/make_l3.py --bench-out: one empty task per rank, no
// windows, so no RESET is sent); one round = DistributedWorker::run() of the
// whole host plan = one DISPATCH to each of the W agents and all W
// DISPATCH_DONEs back. DFX off, log level warn (the agents get --log-level
// warn).
//
// Raw: a ROUTER in this process (tcp loopback, ephemeral port, as the
// coordinator binds) and W separate echo processes (this executable re-run
// with --echo, each a DEALER that sleeps in zmq_poll like an agent's control
// thread); one round = one two-frame message (256 + 64 bytes, about a
// DISPATCH with its 16-element input) to each and all W echoes back.
//
// --handoff adds a third side, raw_zmq_handoff: the same echo, but each
// message goes from the thread that received it to a second thread (mutex +
// condition variable) and back (eventfd, slept on in zmq_poll beside the
// socket), as an agent's control and worker threads pass a DISPATCH and its
// DISPATCH_DONE: what that hand-off alone adds to a round.
//
// Per repetition: --warmup rounds, then --rounds timed rounds of raw (and of
// raw_zmq_handoff), then the same of the runtime (interleaved per repetition).
// Reports per repetition the median us/round of each, and the median over repetitions; plus where a
// runtime round goes (medians): submit() (encode + send of W DISPATCHes),
// the agents' dispatch envelope (worker thread: DISPATCH decoded -> DONE
// built, max over ranks), the "run" phase (ChipWorker::run of the one task,
// max over ranks) and "assemble" (the loaded-program cache lookup).
//
// --profile BUILD: no agents; times the pieces of one dispatch in this process
// on rank 0's sub-build (medians over --rounds): DISPATCH and DISPATCH_DONE
// encode + decode, CompiledProgram::from_sub_build, assemble() of the
// program's sources with a warm store (and its parts: obtain_binary = cache
// key + ABI check per source, the stamp write), ChipWorker::run of the one
// task, and the control thread -> worker thread -> eventfd hand-off.
//
// Output (one line per measurement, key=value after the first word):
//   l3_dispatch impl=raw_zmq world=8 rounds=2000 rep=0 median_us=.. mean_us=.. load=..
//   l3_dispatch impl=runtime world=8 ... median_us=.. submit_us=.. agent_us=.. run_us=.. load=..
//   l3_dispatch summary world=8 raw_us=.. runtime_us=.. ratio=..
#include <sys/eventfd.h>
#include <sys/prctl.h>

#include <CLI/CLI.hpp>
#include <condition_variable>
#include <csignal>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "artifact/assembler.h"
#include "artifact/binary_cache.h"
#include "artifact/chip_build.h"
#include "artifact/host_orch.h"
#include "artifact/kernel_config.h"
#include "artifact/loaded_binary.h"
#include "bench/l3_bench_util.h"
#include "common/log.h"
#include "common/wire/protocol.h"
#include "coordinator/program_inputs.h"
#include "pypto/chip_worker.h"
#include "pypto/compiled_program.h"
#include "pypto/distributed_compiled_program.h"
#include "pypto/distributed_worker.h"
#include "pypto/error.h"
#include "pypto/golden_spec.h"
#include "pypto/npy.h"

namespace pypto::bench {
namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

constexpr size_t kHeaderBytes = 256;
constexpr size_t kPayloadBytes = 64;

using Frames = std::vector<zmq::message_t>;

// Receives one whole message without waiting; empty when none is there.
Frames receive_now(zmq::socket_t& socket) {
  Frames frames;
  for (;;) {
    zmq::message_t frame;
    if (!socket.recv(frame, zmq::recv_flags::dontwait)) break;
    const bool more = frame.more();
    frames.push_back(std::move(frame));
    if (!more) break;
  }
  return frames;
}

bool is_quit(const Frames& frames) {
  return frames.size() == 1 && frames[0].to_string_view() == "quit";
}

void send_all(zmq::socket_t& socket, Frames& frames) {
  for (size_t i = 0; i < frames.size(); ++i)
    socket.send(frames[i],
                i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
}

// The agent's hand-off: what one thread gives (mutex + condition variable) a
// second thread passes back (eventfd, which the first sleeps on in zmq_poll), as
// RankAgent passes a DISPATCH to AgentWorker and the DISPATCH_DONE comes back.
template <class T>
class Handoff {
 public:
  Handoff() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)), second_([this] { pass_back(); }) {}
  ~Handoff() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    second_.join();
    ::close(fd_);
  }
  Handoff(const Handoff&) = delete;
  Handoff& operator=(const Handoff&) = delete;

  int fd() const { return fd_; }
  void give(T item) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_.push_back(std::move(item));
    }
    cv_.notify_one();
  }
  // What came back so far; clears the eventfd.
  std::deque<T> take() {
    uint64_t count = 0;
    (void)::read(fd_, &count, sizeof count);
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(out_, {});
  }

 private:
  void pass_back() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return !in_.empty() || stop_; });
      if (stop_) return;
      out_.push_back(std::move(in_.front()));
      in_.pop_front();
      const uint64_t one = 1;
      (void)::write(fd_, &one, sizeof one);
    }
  }

  const int fd_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<T> in_, out_;
  bool stop_ = false;
  std::thread second_;  // last: it starts once the rest is built
};

// --echo ENDPOINT --handoff: the echo, each message passed to a second thread
// and back before it is returned.
int echo_handoff(zmq::socket_t& socket) {
  Handoff<Frames> handoff;
  for (;;) {
    zmq::pollitem_t items[2] = {{socket.handle(), 0, ZMQ_POLLIN, 0},
                                {nullptr, handoff.fd(), ZMQ_POLLIN, 0}};
    zmq::poll(items, 2, std::chrono::milliseconds(-1));
    for (Frames& frames : handoff.take()) send_all(socket, frames);
    for (Frames frames = receive_now(socket); !frames.empty(); frames = receive_now(socket)) {
      if (is_quit(frames)) return 0;
      handoff.give(std::move(frames));
    }
  }
}

// --echo ENDPOINT: a DEALER that returns every message it gets, until "quit".
int echo_main(const std::string& endpoint, bool handoff) {
  zmq::context_t context(1);
  zmq::socket_t socket(context, zmq::socket_type::dealer);
  socket.set(zmq::sockopt::linger, 0);
  socket.connect(endpoint);
  socket.send(zmq::str_buffer("hello"), zmq::send_flags::none);
  if (handoff) return echo_handoff(socket);
  for (;;) {
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(-1));
    for (Frames frames = receive_now(socket); !frames.empty(); frames = receive_now(socket)) {
      if (is_quit(frames)) return 0;
      send_all(socket, frames);
    }
  }
}

// The raw side: ROUTER + W echo processes.
class RawEcho {
 public:
  RawEcho(int world, const std::string& self, bool handoff)
      : socket_(context_, zmq::socket_type::router) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.set(zmq::sockopt::router_mandatory, true);
    socket_.bind("tcp://127.0.0.1:*");
    const std::string endpoint = socket_.get(zmq::sockopt::last_endpoint);
    for (int r = 0; r < world; ++r) {
      const pid_t pid = fork();
      if (pid < 0) throw InfraError("fork failed");
      if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive the benchmark
        execl(self.c_str(), self.c_str(), "--echo", endpoint.c_str(),
              handoff ? "--handoff" : nullptr, static_cast<char*>(nullptr));
        _exit(127);
      }
      pids_.push_back(pid);
    }
    while (identities_.size() < size_t(world)) {
      zmq::message_t id, hello;
      (void)socket_.recv(id);
      (void)socket_.recv(hello);
      identities_.push_back(id.to_string());
    }
    header_.assign(kHeaderBytes, 'h');
    payload_.assign(kPayloadBytes, 'p');
  }
  ~RawEcho() {
    for (const std::string& id : identities_) {
      try {
        socket_.send(zmq::buffer(id), zmq::send_flags::sndmore);
        socket_.send(zmq::str_buffer("quit"), zmq::send_flags::none);
      } catch (...) {
      }
    }
    for (pid_t pid : pids_) {
      int status = 0;
      waitpid(pid, &status, 0);
    }
  }
  void round() {
    for (const std::string& id : identities_) {
      socket_.send(zmq::buffer(id), zmq::send_flags::sndmore);
      socket_.send(zmq::buffer(header_), zmq::send_flags::sndmore);
      socket_.send(zmq::buffer(payload_), zmq::send_flags::none);
    }
    for (size_t r = 0; r < identities_.size(); ++r) {
      for (;;) {
        zmq::message_t frame;
        (void)socket_.recv(frame);
        if (!frame.more()) break;
      }
    }
  }

 private:
  zmq::context_t context_{1};
  zmq::socket_t socket_;
  std::vector<pid_t> pids_;
  std::vector<std::string> identities_;
  std::string header_, payload_;
};

int64_t timing_ns(const DispatchOutcome& d, const std::string& phase) {
  for (const auto& t : d.timings)
    if (t.phase == phase) return t.ns;
  return 0;
}

struct RuntimeRep {
  std::vector<double> round_us, submit_us, agent_us, run_us, assemble_us;
};

void bench_world(const fs::path& build_dir, int rounds, int warmup, int reps,
                 const std::string& self, bool handoff, std::vector<std::string>& summary) {
  const DistributedCompiledProgram program = DistributedCompiledProgram::from_dir(build_dir);
  const int world = static_cast<int>(program.world_size());
  DistributedWorkerOptions options;
  options.mpirun.rank_binary = fs::path(std::getenv("PYPTO_RANK"));
  // The agents sit idle while the raw rounds run: not a lost coordinator.
  options.heartbeat_timeout = std::chrono::minutes(30);
  std::unique_ptr<DistributedWorker> worker = DistributedWorker::prepare(program, options);
  std::printf("# %s: world %d, launch %.0f ms, prepare %.0f ms\n", build_dir.c_str(), world,
              worker->prepare_report().launch_ms, worker->prepare_report().prepare_ms);

  // One checked run: y == golden expected.
  std::vector<Tensor> args = coord::prepare_arguments(program, {}).tensors;
  DistributedRunOptions run_options;  // DFX off, windows: none to reset
  worker->run(program, args, run_options);
  for (size_t i = 0; i < program.params().size(); ++i) {
    if (!program.params()[i].is_output()) continue;
    const Tensor expected =
        read_npy(GoldenSpec::expected_path(program.dir(), program.params()[i].name));
    if (expected.nbytes() != args[i].nbytes() ||
        std::memcmp(expected.data(), args[i].data(), expected.nbytes()) != 0)
      throw ValidationError("WRONG RESULT: output " + program.params()[i].name + " of " +
                            build_dir.string());
  }

  RawEcho raw(world, self, false);
  std::unique_ptr<RawEcho> raw_handoff;
  if (handoff) raw_handoff = std::make_unique<RawEcho>(world, self, true);
  // One side's timed rounds: the median us/round, and a line for it.
  auto time_raw = [&](RawEcho& echo, const char* impl, int rep) {
    for (int i = 0; i < warmup; ++i) echo.round();
    std::vector<double> us;
    us.reserve(size_t(rounds));
    const auto side_start = Clock::now();
    for (int i = 0; i < rounds; ++i) {
      const auto start = Clock::now();
      echo.round();
      us.push_back(us_since(start));
    }
    const double mean = us_since(side_start) / rounds, middle = median(us);
    std::printf("l3_dispatch impl=%s world=%d rounds=%d rep=%d median_us=%.1f mean_us=%.1f "
                "min_us=%.1f load=%.2f\n",
                impl, world, rounds, rep, middle, mean, min_of(us), load_average());
    return middle;
  };
  std::vector<double> raw_medians, handoff_medians, runtime_medians;
  for (int rep = 0; rep < reps; ++rep) {
    raw_medians.push_back(time_raw(raw, "raw_zmq", rep));
    if (raw_handoff) handoff_medians.push_back(time_raw(*raw_handoff, "raw_zmq_handoff", rep));

    // Runtime.
    for (int i = 0; i < warmup; ++i) worker->run(program, args, run_options);
    RuntimeRep r;
    const auto rt_start = Clock::now();
    for (int i = 0; i < rounds; ++i) {
      const auto start = Clock::now();
      RunHandle handle = worker->submit(program, args, run_options);
      const double submit = us_since(start);
      const DistributedRunResult result = handle.wait();
      r.round_us.push_back(us_since(start));
      r.submit_us.push_back(submit);
      double agent = 0, run = 0, assemble = 0;
      for (const DispatchOutcome& d : result.dispatches) {
        agent = std::max(agent, double(d.end_unix_ns - d.start_unix_ns) / 1e3);
        run = std::max(run, double(timing_ns(d, "run")) / 1e3);
        assemble = std::max(assemble, double(timing_ns(d, "assemble")) / 1e3);
      }
      r.agent_us.push_back(agent);
      r.run_us.push_back(run);
      r.assemble_us.push_back(assemble);
    }
    const double rt_mean = us_since(rt_start) / rounds;
    runtime_medians.push_back(median(r.round_us));
    std::printf("l3_dispatch impl=runtime world=%d rounds=%d rep=%d median_us=%.1f mean_us=%.1f "
                "min_us=%.1f submit_us=%.1f agent_max_us=%.1f run_max_us=%.1f "
                "assemble_max_us=%.1f ratio=%.2f load=%.2f\n",
                world, rounds, rep, runtime_medians.back(), rt_mean, min_of(r.round_us),
                median(r.submit_us), median(r.agent_us), median(r.run_us), median(r.assemble_us),
                runtime_medians.back() / raw_medians.back(), load_average());
    std::fflush(stdout);
  }
  worker->close();
  const double raw_us = median(raw_medians), rt_us = median(runtime_medians);
  std::string handoff_text;
  if (!handoff_medians.empty())
    handoff_text = " handoff_us=" + join({median(handoff_medians)}, "%.1f") +
                   " handoff_reps=" + join(handoff_medians, "%.1f");
  char line[768];
  std::snprintf(line, sizeof line,
                "l3_dispatch summary world=%d reps=%d raw_us=%.1f runtime_us=%.1f ratio=%.2f "
                "raw_reps=%s runtime_reps=%s%s",
                world, reps, raw_us, rt_us, rt_us / raw_us, join(raw_medians, "%.1f").c_str(),
                join(runtime_medians, "%.1f").c_str(), handoff_text.c_str());
  summary.push_back(line);
}


// --profile: the pieces of one dispatch, in this process, each --rounds times
// (median us): what the coordinator and an agent do per DISPATCH besides the
// transport, measured one by one on rank 0's sub-build of the bench build.
template <class F>
double median_us(int n, F&& body) {
  std::vector<double> us;
  us.reserve(size_t(n));
  for (int i = 0; i < n; ++i) {
    const auto start = Clock::now();
    body();
    us.push_back(us_since(start));
  }
  return median(us);
}

void profile_pieces(const fs::path& build_dir, int n, const fs::path& scratch) {
  const DistributedCompiledProgram program = DistributedCompiledProgram::from_dir(build_dir);
  const Dispatch& plan = *program.dispatches_of(0).at(0);
  // A private copy of rank 0's sub-build (assembly writes its cache stamp there).
  const fs::path dir = scratch / "profile_sub_build";
  fs::copy(program.chip(0).dir, dir, fs::copy_options::recursive);
  const fs::path store = scratch / "profile_bin";
  const RunConfig config;  // DFX off
  const std::string platform = program.platform();
  const std::string arch = arch_name(parse_platform(platform).arch);

  // The DISPATCH of rank 0 as the coordinator builds it: x (In, 64 bytes) and y (Out).
  std::vector<ParamInfo> params;
  for (const ParamInfo& p : program.params()) {
    ParamInfo row = p;
    row.shape = {1, 1, p.shape.back()};
    params.push_back(row);
  }
  wire::Dispatch message;
  message.program = plan.program;
  for (const ParamInfo& p : params) {
    wire::DispatchArg arg;
    arg.kind = wire::DispatchArg::kTensor;
    arg.tensor.name = p.name;
    arg.tensor.dtype = "f32";
    arg.tensor.shape = p.shape;
    arg.tensor.direction = p.is_input() ? "In" : "Out";
    if (p.is_input()) arg.tensor.nbytes = 64;
    message.args.push_back(arg);
  }
  message.dfx = wire::to_wire(config.dfx_options());
  message.run = wire::to_wire(config.run_options());
  message.run.platform = platform;
  const std::string payload(64, '\0');
  wire::DispatchDone done;
  done.ok = true;
  done.timings = {{"assemble", 1}, {"run", 2}};
  wire::TensorMeta meta;
  meta.name = "y";
  meta.dtype = "f32";
  meta.shape = params.back().shape;
  meta.direction = "Out";
  meta.nbytes = 64;
  done.outputs.push_back(meta);

  const double codec_dispatch = median_us(n, [&] {
    std::vector<zmq::message_t> payloads;
    payloads.push_back(wire::frame_of(payload));
    std::vector<zmq::message_t> frames = wire::encode(message, std::move(payloads), -1, 7);
    wire::Decoded decoded = wire::decode(frames, {wire::Role::kAgent, 0});
  });
  const double codec_done = median_us(n, [&] {
    std::vector<zmq::message_t> payloads;
    payloads.push_back(wire::frame_of(payload));
    std::vector<zmq::message_t> frames = wire::encode(done, std::move(payloads), 0, 7);
    wire::Decoded decoded = wire::decode(frames, {wire::Role::kCoordinator, -1});
  });

  const double from_sub_build = median_us(n, [&] {
    CompiledProgram p = CompiledProgram::from_sub_build(dir, plan.program, params, platform, arch);
  });
  const CompiledProgram compiled =
      CompiledProgram::from_sub_build(dir, plan.program, params, platform, arch);
  std::vector<std::string> sources{compiled.orchestration().source};
  for (const auto& k : compiled.kernel_config().kernels) sources.push_back(k.source);
  AssembleOptions options;
  options.platform = platform;
  options.arch = arch;
  options.store_dir = store;
  assemble(dir, sources, options);  // compiles once
  const double assemble_default = median_us(n, [&] { assemble(dir, sources, options); });
  options.jobs = 1;
  const double assemble_one_thread = median_us(n, [&] { assemble(dir, sources, options); });
  // Inside assemble(), per source: the cache key (include closure + SHA-256), the ABI
  // check of the cached binary (dlopen + dlsym + dlclose); once per call: the stamp.
  const double cache_keys = median_us(n, [&] {
    for (const std::string& source : sources) binary_cache_key(dir / source, platform, arch);
  });
  const AssembledBinaries paths = assemble(dir, sources, options);
  std::map<std::string, CachedBinary> cached;
  const double obtain = median_us(n, [&] {
    for (const std::string& source : sources)
      cached[source] = obtain_binary(dir, dir / source, platform, arch, store);
  });
  const double stamp = median_us(n, [&] { record_binaries(dir, cached, platform, arch); });
  const double abi_checks = median_us(n, [&] {
    for (const auto& entry : paths) {
      LoadedBinary binary(entry.second);
      (void)binary.abi_version();
    }
  });

  ChipWorker chip(config);
  DispatchContext context;
  context.binary_store = store;
  context.dfx_dir = scratch / "profile_dfx";
  std::vector<Tensor> tensors;
  for (const ParamInfo& p : params) tensors.push_back(Tensor::empty(p.dtype, p.shape));
  chip.run(compiled, tensors, context);
  std::vector<double> assemble_ms, run_ms;
  const double chip_run = median_us(n, [&] {
    const ChipRunResult r = chip.run(compiled, tensors, context);
    assemble_ms.push_back(r.assemble_ms * 1e3);
    run_ms.push_back(r.run_ms * 1e3);
  });

  // The agent's hand-off alone: control thread -> worker thread -> control thread.
  Handoff<int> pass;
  const double handoff = median_us(n, [&] {
    pass.give(1);
    zmq::pollitem_t item{nullptr, pass.fd(), ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(-1));
    (void)pass.take();
  });

  std::printf("l3_dispatch profile rounds=%d codec_dispatch_us=%.1f codec_done_us=%.1f "
              "from_sub_build_us=%.1f assemble_us=%.1f assemble_jobs1_us=%.1f "
              "obtain_binary_us=%.1f cache_keys_us=%.1f abi_checks_us=%.1f stamp_us=%.1f chip_run_us=%.1f chip_assemble_us=%.1f "
              "chip_run_phase_us=%.1f handoff_us=%.1f\n",
              n, codec_dispatch, codec_done, from_sub_build, assemble_default, assemble_one_thread,
              obtain, cache_keys, abi_checks, stamp,
              chip_run, median(assemble_ms), median(run_ms), handoff);
}

}  // namespace
}  // namespace pypto::bench

int main(int argc, char** argv) {
  using namespace pypto::bench;
  if (argc >= 3 && std::string(argv[1]) == "--echo")
    return echo_main(argv[2], argc == 4 && std::string(argv[3]) == "--handoff");
  CLI::App app{"l3_dispatch_bench: empty-dispatch round trip vs raw ZeroMQ"};
  std::vector<std::string> builds;
  int rounds = 2000, warmup = 200, reps = 5;
  app.add_option("builds", builds, "empty_w<W> bench build directories (make_l3.py --bench-out)")
      ->required();
  app.add_option("--rounds", rounds, "timed rounds per repetition and side");
  app.add_option("--warmup", warmup, "untimed rounds before each repetition's timed ones");
  app.add_option("--reps", reps, "repetitions (each: raw, then runtime)");
  bool handoff = false;
  app.add_flag("--handoff", handoff,
               "also time raw_zmq_handoff: the echo with a thread hand-off each way");
  bool profile = false;
  app.add_flag("--profile", profile,
               "time the pieces of a dispatch in this process instead (first build only)");
  CLI11_PARSE(app, argc, argv);
  try {
    pypto::log::init(std::string("warn"));
    const ScratchDir scratch_dir("l3_dispatch_bench");
    const fs::path& scratch = scratch_dir.path();
    l3_bench_env(scratch);
    const std::string self = fs::canonical("/proc/self/exe").string();
    std::printf("# l3_dispatch_bench: rounds=%d warmup=%d reps=%d, DFX off, log level warn, "
                "store %s\n",
                rounds, warmup, reps, std::getenv("PYPTO_BLOB_STORE"));
    if (profile) {
      profile_pieces(builds.at(0), rounds, scratch);
      return 0;
    }
    std::vector<std::string> summary;
    for (const std::string& build : builds)
      bench_world(build, rounds, warmup, reps, self, handoff, summary);
    for (const std::string& line : summary) std::printf("%s\n", line.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "l3_dispatch_bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
