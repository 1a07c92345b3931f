// pypto-rank as a user meets it: two agents under a real mpirun, driven by a
// scripted fake coordinator (a ROUTER bound here) through the sequence of
// docs/protocol.md, on the world-8 allreduce fixture's rank sub-build run at
// world 2. Every test keeps its blob store, binary store and workspaces in a
// scratch directory, never in ~/.cache.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <future>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <zmq_addon.hpp>

#include "common/subprocess.h"
#include "common/wire/blob_store.h"
#include "common/wire/channel.h"
#include "common/wire/manifest.h"
#include "common/wire/wire_test_util.h"
#include "rank_agent/agent_options.h"

namespace pypto::rank {
namespace {

using namespace std::chrono_literals;
using wire::MessageType;
using wire::testing::ScratchDir;

constexpr int kWorld = 2;
const fs::path kSubBuild =
    fs::path(PYPTO_SOURCE_DIR) / "tests/fixtures/l3/allreduce_w8/next_levels/0";

// The run key of every fake coordinator of this process and its agents.
const wire::RunKeys& test_keys() {
  static const wire::RunKeys keys = wire::RunKeys::generate();
  return keys;
}

// mpirun -n 2 pypto-rank ... on a thread; the result once it exits. The agents get
// test_keys() through PYPTO_RUN_KEY unless `run_key` says otherwise.
class AgentJob {
 public:
  AgentJob(const std::string& endpoint, const ScratchDir& dir,
           std::vector<std::string> extra = {},
           const std::string& run_key = test_keys().agent_key_text()) {
    std::vector<std::string> argv = {PYPTO_MPIEXEC,
                                     "--allow-run-as-root",
                                     "--oversubscribe",
                                     "-n",
                                     std::to_string(kWorld),
                                     PYPTO_RANK_BIN,
                                     "--coord",
                                     endpoint,
                                     "--blob-store",
                                     (dir / "cache/blobs").string(),
                                     "--binary-store",
                                     (dir / "cache/bin").string(),
                                     "--workspace",
                                     (dir / "ws").string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    SubprocessOptions options;
    options.timeout = 90s;
    options.extra_env = {"PYPTO_AIC_CORES=1", "PYPTO_AIV_CORES=1",
                         std::string(wire::kRunKeyEnv) + "=" + run_key};
    result_ =
        std::async(std::launch::async, [argv, options] { return run_subprocess(argv, options); });
  }
  SubprocessResult wait() { return result_.get(); }

 private:
  std::future<SubprocessResult> result_;
};

// The coordinator's side of the wire, scripted by each test.
class FakeCoordinator {
 public:
  FakeCoordinator() : channel_(wire::Channel::bind(context_, "tcp://127.0.0.1:*", options())) {}
  std::string endpoint() const { return channel_.endpoint(); }

  // One message of `type` from every rank (HEARTBEATs skipped), by rank.
  std::map<int, wire::Decoded> expect_all(MessageType type,
                                          std::chrono::milliseconds timeout = 60s) {
    std::map<int, wire::Decoded> got;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (static_cast<int>(got.size()) < kWorld) {
      auto message = channel_.receive_until(deadline);
      if (!message) {
        ADD_FAILURE() << "timed out waiting for " << wire::message_type_name(type) << " ("
                      << got.size() << " of " << kWorld << ")";
        return got;
      }
      const int rank = message->envelope.sender_rank;
      if (message->is<wire::Hello>()) identities_[rank] = message->identity;
      if (message->is<wire::Heartbeat>()) continue;
      if (auto* attach = std::get_if<wire::Attach>(&message->message)) {
        EXPECT_EQ(attach->rank, rank);
        EXPECT_EQ(attach->token, attach_token_ + static_cast<uint64_t>(rank));
        EXPECT_NE(message->identity, identities_.at(rank)) << "ATTACH on the control connection";
        data_identities_[rank] = message->identity;
        continue;
      }
      if (message->type() != type) {
        std::string detail;
        if (auto* error = std::get_if<wire::AgentError>(&message->message)) detail = error->message;
        ADD_FAILURE() << "rank " << rank << " sent " << wire::message_type_name(message->type())
                      << " instead of " << wire::message_type_name(type) << ": " << detail;
        continue;
      }
      got.emplace(rank, std::move(*message));
    }
    return got;
  }

  void send(int rank, const wire::Message& message, std::vector<zmq::message_t> payloads = {},
            uint64_t request_id = 0) {
    channel_.send_to(identities_.at(rank), message, std::move(payloads), request_id);
  }
  void send_all(const wire::Message& message, uint64_t request_id = 0) {
    for (int r = 0; r < kWorld; ++r) send(r, message, {}, request_id);
  }
  // RESET / DISPATCH / RESIDENT: on the rank's data connection once it attached one.
  void send_work(int rank, const wire::Message& message,
                 std::vector<zmq::message_t> payloads = {}, uint64_t request_id = 0) {
    auto data = data_identities_.find(rank);
    channel_.send_to(data != data_identities_.end() ? data->second : identities_.at(rank),
                     message, std::move(payloads), request_id);
  }
  bool attached(int rank) const { return data_identities_.count(rank) > 0; }
  const std::string& data_identity(int rank) const { return data_identities_.at(rank); }

  // HELLO from every rank, answered by WELCOME. A nonzero `attach_token` (rank r's
  // is attach_token + r) asks each agent's worker for a data connection.
  void welcome(uint32_t heartbeat_ms = 200, uint32_t deadline_ms = 30000,
               uint64_t attach_token = 0) {
    attach_token_ = attach_token;
    auto hellos = expect_all(MessageType::kHello);
    for (auto& [rank, hello] : hellos) {
      const auto& body = hello.as<wire::Hello>();
      pids_[rank] = static_cast<pid_t>(body.pid);
      EXPECT_EQ(body.rank, rank);
      EXPECT_EQ(body.world, kWorld);
      EXPECT_FALSE(body.host.empty());
      EXPECT_EQ(body.mpi_thread_level, "MPI_THREAD_MULTIPLE");
      wire::Welcome w;
      w.run_id = "test-run";
      w.heartbeat_interval_ms = heartbeat_ms;
      w.deadline_ms = deadline_ms;
      if (attach_token != 0) w.attach_token = attach_token + static_cast<uint64_t>(rank);
      send(rank, w, {}, hello.envelope.request_id);
    }
  }

 private:
  static wire::ChannelOptions options() {
    wire::ChannelOptions options;
    options.curve_server = test_keys().server;
    return options;
  }

  zmq::context_t context_;
  wire::Channel channel_;
  std::map<int, std::string> identities_;
  std::map<int, std::string> data_identities_;
  uint64_t attach_token_ = 0;
  std::map<int, pid_t> pids_;

 public:
  pid_t pid(int rank) const { return pids_.at(rank); }
  const std::string& identity(int rank) const { return identities_.at(rank); }
  wire::Channel& channel() { return channel_; }
};

// utime + stime of a process, in clock ticks.
long cpu_ticks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  return utime + stime;
}

wire::Manifest manifest_for(int rank, const fs::path& sub_build = kSubBuild) {
  wire::Manifest m = wire::build_manifest(sub_build, wire::kSubBuildExcludes, rank);
  m.build = "main";
  m.windows = {{"data", "f32", 1024, {0, 1}}, {"signal", "i32", 32, {0, 1}}};
  return m;
}

std::vector<float> row(int rank, float scale) {
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[i] = scale * static_cast<float>(rank * 1000 + i);
  return x;
}

wire::Dispatch allreduce_dispatch(uint64_t index, const std::vector<float>& x) {
  wire::Dispatch d;
  d.build = "main";
  d.index = index;
  d.program = "chip_orch";
  wire::DispatchArg in;
  in.tensor = {"x", "f32", {1, 1, 256}, "In", x.size() * sizeof(float)};
  wire::DispatchArg out;
  out.tensor = {"y", "f32", {1, 1, 256}, "Out", 0};
  wire::DispatchArg data;
  data.kind = wire::DispatchArg::kWindow;
  data.window = "data";
  data.window_id = 0;
  wire::DispatchArg signal = data;
  signal.window = "signal";
  signal.window_id = 1;
  d.args = {in, out, data, signal};
  d.run.wait_timeout_ms = 20000;
  return d;
}

// y = x_0 + x_1 on every rank.
void check_allreduce(int rank, wire::Decoded& message, uint64_t index, float scale) {
  const auto& body = message.as<wire::DispatchDone>();
  EXPECT_EQ(message.envelope.request_id, 100 + index);
  ASSERT_TRUE(body.ok) << body.error.message;
  EXPECT_EQ(body.index, index);
  EXPECT_GT(body.end_unix_ns, body.start_unix_ns);
  ASSERT_EQ(body.outputs.size(), 1u);
  EXPECT_EQ(body.outputs[0].name, "y");
  EXPECT_EQ(body.outputs[0].direction, "Out");
  ASSERT_EQ(body.outputs[0].nbytes, 256u * 4);
  std::vector<float> y(256);
  std::memcpy(y.data(), message.payload(0).data(), 256 * 4);
  const auto x0 = row(0, scale), x1 = row(1, scale);
  for (int i = 0; i < 256; ++i)
    ASSERT_FLOAT_EQ(y[i], x0[i] + x1[i]) << "rank " << rank << " y[" << i << "]";
}

// Sends one allreduce dispatch to every rank and checks y = x_0 + x_1 everywhere.
std::map<int, wire::Decoded> run_allreduce(FakeCoordinator& coord, uint64_t index, float scale,
                                           const wire::WireDfxOptions& dfx = {},
                                           bool reset_windows = false) {
  for (int r = 0; r < kWorld; ++r) {
    wire::Dispatch d = allreduce_dispatch(index, row(r, scale));
    d.dfx = dfx;
    d.reset_windows = reset_windows;
    const auto x = row(r, scale);
    std::vector<zmq::message_t> frames;
    frames.push_back(wire::frame_of({reinterpret_cast<const char*>(x.data()), x.size() * 4}));
    coord.send_work(r, d, std::move(frames), 100 + index);
  }
  auto done = coord.expect_all(MessageType::kDispatchDone);
  for (auto& [rank, message] : done) {
    check_allreduce(rank, message, index, scale);
    // The worker answers on the connection the work came on.
    if (coord.attached(rank)) {
      EXPECT_EQ(message.identity, coord.data_identity(rank));
    }
  }
  return done;
}

// Ships the manifest (rank 0 gets every blob, rank 1 none: one copy per host)
// and returns the READYs.
std::map<int, wire::Decoded> prepare(FakeCoordinator& coord, uint64_t request_id,
                                     size_t expected_need) {
  for (int r = 0; r < kWorld; ++r) coord.send(r, manifest_for(r), {}, request_id);
  auto needs = coord.expect_all(MessageType::kNeed);
  std::vector<std::string> hashes;
  for (auto& [rank, need] : needs) {
    EXPECT_EQ(need.envelope.request_id, request_id);
    EXPECT_EQ(need.as<wire::Need>().hashes.size(), expected_need) << "rank " << rank;
    if (rank == 0) hashes = need.as<wire::Need>().hashes;
  }
  std::map<std::string, fs::path> by_hash;
  for (const auto& file : manifest_for(0).files) by_hash[file.sha256] = kSubBuild / file.path;
  std::vector<zmq::message_t> frames;
  for (const auto& h : hashes)
    frames.push_back(wire::frame_of(wire::testing::read_text(by_hash.at(h))));
  coord.send(0, wire::Blobs{hashes}, std::move(frames), request_id + 1);
  coord.send(1, wire::Blobs{}, {}, request_id + 1);
  auto ready = coord.expect_all(MessageType::kReady);
  for (auto& [rank, message] : ready) {
    EXPECT_EQ(message.envelope.request_id, request_id + 1);
    const auto& body = message.as<wire::Ready>();
    EXPECT_TRUE(body.ok) << body.error.message;
    EXPECT_EQ(body.rank, rank);
    EXPECT_EQ(body.cache_hits + body.compiles, 2u) << "one orchestration + one kernel";
  }
  return ready;
}

// With data connections, as pypto-coord runs it; the other tests use none, the
// agent's path for work that arrives before the coordinator has the ATTACH.
TEST(PyptoRank, RunsTheSequenceAndShipsNothingTheSecondTime) {
  ScratchDir dir;
  FakeCoordinator coord;
  AgentJob job(coord.endpoint(), dir, {"--connect-timeout", "60"});
  coord.welcome(200, 30000, 0x5eed0000);

  const size_t files = wire::manifest_hashes(manifest_for(0)).size();
  uint64_t compiles = 0;
  for (auto& [rank, message] : prepare(coord, 10, files))
    compiles += message.as<wire::Ready>().compiles;
  EXPECT_EQ(compiles, 2u) << "each source compiles once per host";
  run_allreduce(coord, 0, 1.0f);

  // Unchanged build: nothing to ship, nothing to compile; RESET zeroes the
  // signal cells so the second allreduce waits for fresh notifies.
  auto ready = prepare(coord, 20, 0);
  for (auto& [rank, message] : ready) EXPECT_EQ(message.as<wire::Ready>().compiles, 0u);
  for (int r = 0; r < kWorld; ++r) {
    ASSERT_TRUE(coord.attached(r)) << "rank " << r << "'s worker sent no ATTACH";
    coord.send_work(r, wire::Reset{"main"}, {}, 30);
  }
  for (auto& [rank, message] : coord.expect_all(MessageType::kReady)) {
    EXPECT_TRUE(message.as<wire::Ready>().ok) << message.as<wire::Ready>().error.message;
    EXPECT_EQ(message.envelope.request_id, 30u);
    EXPECT_EQ(message.identity, coord.data_identity(rank));
  }
  // The control thread still answers at once on its own connection.
  coord.send(0, wire::StateQuery{}, {}, 31);
  for (;;) {
    auto message = coord.channel().receive(10s);
    ASSERT_TRUE(message) << "no RANK_STATE";
    if (!message->is<wire::RankState>()) continue;
    EXPECT_EQ(message->identity, coord.identity(0));
    EXPECT_EQ(message->envelope.request_id, 31u);
    break;
  }
  wire::WireDfxOptions dfx;
  dfx.enable_dep_gen = true;
  auto done = run_allreduce(coord, 1, 0.5f, dfx);
  for (auto& [rank, message] : done) {
    const auto& body = message.as<wire::DispatchDone>();
    EXPECT_EQ(message.payloads.size(), body.outputs.size() + body.dfx_files.size());
    EXPECT_NE(std::find(body.dfx_files.begin(), body.dfx_files.end(), "deps.json"),
              body.dfx_files.end());
  }
  // The same reset carried by the dispatch itself, as pypto-coord sends it.
  run_allreduce(coord, 2, 2.0f, {}, /*reset_windows=*/true);

  coord.send_all(wire::Shutdown{});
  const SubprocessResult result = job.wait();
  EXPECT_EQ(result.exit_code, 0) << result.describe() << "\n" << result.output;
  EXPECT_FALSE(fs::exists(dir / "ws/rank0")) << "workspace not removed";
  EXPECT_FALSE(fs::exists(dir / "ws/rank1")) << "workspace not removed";
  wire::BlobStore store(dir / "cache/blobs");
  EXPECT_EQ(store.list().size(), files);
}

TEST(PyptoRank, FailedDispatchNamesRankAndProgramAndShutdownExitsZero) {
  ScratchDir dir;
  FakeCoordinator coord;
  AgentJob job(coord.endpoint(), dir);
  coord.welcome();
  prepare(coord, 10, wire::manifest_hashes(manifest_for(0)).size());
  for (int r = 0; r < kWorld; ++r) {
    wire::Dispatch d = allreduce_dispatch(0, row(r, 1.0f));
    d.program = "no_such_orch";
    const auto x = row(r, 1.0f);
    std::vector<zmq::message_t> frames;
    frames.push_back(wire::frame_of({reinterpret_cast<const char*>(x.data()), x.size() * 4}));
    coord.send(r, d, std::move(frames), 7);
  }
  for (auto& [rank, message] : coord.expect_all(MessageType::kDispatchDone)) {
    const auto& body = message.as<wire::DispatchDone>();
    EXPECT_FALSE(body.ok);
    EXPECT_EQ(message.envelope.request_id, 7u);
    EXPECT_EQ(body.error.exit_code, 3);
    EXPECT_EQ(body.error.message.rfind("rank " + std::to_string(rank) + ": ", 0), 0u)
        << body.error.message;
    EXPECT_NE(body.error.message.find("no_such_orch"), std::string::npos) << body.error.message;
    EXPECT_TRUE(message.payloads.empty());
  }
  // Nothing collective was left half done: a clean exit.
  coord.send_all(wire::Shutdown{});
  const SubprocessResult result = job.wait();
  EXPECT_EQ(result.exit_code, 0) << result.describe() << "\n" << result.output;
}

TEST(PyptoRank, KernelCompileErrorFailsReadyWithExitCodeOne) {
  ScratchDir dir;
  const fs::path broken = dir / "broken";
  fs::copy(kSubBuild, broken, fs::copy_options::recursive);
  fs::remove_all(broken / "cache");
  {
    std::ofstream out(broken / "kernels/aiv/reduce_step.cpp", std::ios::app);
    out << "\nthis is not C++;\n";
  }
  FakeCoordinator coord;
  AgentJob job(coord.endpoint(), dir);
  coord.welcome();
  for (int r = 0; r < kWorld; ++r) coord.send(r, manifest_for(r, broken), {}, 1);
  std::vector<std::string> hashes;
  for (auto& [rank, need] : coord.expect_all(MessageType::kNeed))
    if (rank == 0) hashes = need.as<wire::Need>().hashes;
  std::map<std::string, fs::path> by_hash;
  for (const auto& file : manifest_for(0, broken).files) by_hash[file.sha256] = broken / file.path;
  std::vector<zmq::message_t> frames;
  for (const auto& h : hashes)
    frames.push_back(wire::frame_of(wire::testing::read_text(by_hash.at(h))));
  coord.send(0, wire::Blobs{hashes}, std::move(frames), 2);
  coord.send(1, wire::Blobs{}, {}, 2);
  for (auto& [rank, message] : coord.expect_all(MessageType::kReady)) {
    const auto& body = message.as<wire::Ready>();
    EXPECT_FALSE(body.ok);
    EXPECT_EQ(body.error.exit_code, 1);
    EXPECT_EQ(body.error.message.rfind("rank " + std::to_string(rank) + ": build 'main': ", 0), 0u)
        << body.error.message;
    EXPECT_NE(body.error.message.find("reduce_step.cpp"), std::string::npos) << body.error.message;
  }
  // The windows were still created on every rank, so the ranks stay in step.
  coord.send_all(wire::Shutdown{});
  const SubprocessResult result = job.wait();
  EXPECT_EQ(result.exit_code, 0) << result.describe() << "\n" << result.output;
}

TEST(PyptoRank, BlobShippedToNoRankFailsReadyNamingIt) {
  ScratchDir dir;
  FakeCoordinator coord;
  AgentJob job(coord.endpoint(), dir);
  coord.welcome();
  for (int r = 0; r < kWorld; ++r) coord.send(r, manifest_for(r), {}, 1);
  coord.expect_all(MessageType::kNeed);
  coord.send_all(wire::Blobs{}, 2);  // a coordinator that forgot to ship anything
  std::string kernel_hash;
  for (const auto& file : manifest_for(0).files)
    if (file.path == "kernels/aiv/reduce_step.cpp") kernel_hash = file.sha256;
  for (auto& [rank, message] : coord.expect_all(MessageType::kReady)) {
    const auto& body = message.as<wire::Ready>();
    EXPECT_FALSE(body.ok);
    EXPECT_EQ(body.error.exit_code, 3);
    EXPECT_NE(body.error.message.find("kernels/aiv/reduce_step.cpp (sha256 " + kernel_hash + ")"),
              std::string::npos)
        << body.error.message;
  }
  coord.send_all(wire::Shutdown{});
  const SubprocessResult result = job.wait();
  EXPECT_EQ(result.exit_code, 0) << result.describe() << "\n" << result.output;
}

TEST(PyptoRank, IdleAgentSleepsAndSigtermIsReportedAsAgentError) {
  ScratchDir dir;
  FakeCoordinator coord;
  AgentJob job(coord.endpoint(), dir);
  coord.welcome();
  // A HEARTBEAT shows rank 1 in its control loop.
  for (;;) {
    auto message = coord.channel().receive(10s);
    ASSERT_TRUE(message) << "no HEARTBEAT";
    if (message->is<wire::Heartbeat>() && message->envelope.sender_rank == 1) break;
  }
  // Idle, the agent sleeps in zmq_poll: well under 10% of a core.
  const long before = cpu_ticks(coord.pid(1));
  std::this_thread::sleep_for(1s);
  EXPECT_LT(cpu_ticks(coord.pid(1)) - before, sysconf(_SC_CLK_TCK) / 10);
  ASSERT_EQ(::kill(coord.pid(1), SIGTERM), 0);
  std::optional<wire::AgentError> error;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!error) {
    auto message = coord.channel().receive_until(deadline);
    ASSERT_TRUE(message) << "no AGENT_ERROR after SIGTERM";
    if (message->is<wire::AgentError>() && message->envelope.sender_rank == 1)
      error = message->as<wire::AgentError>();
  }
  EXPECT_EQ(error->rank, 1);
  EXPECT_EQ(error->exit_code, 128 + SIGTERM);
  EXPECT_EQ(error->message, "rank 1: stopped by SIGTERM");
  const SubprocessResult result = job.wait();
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_FALSE(result.timed_out) << result.output;
}

TEST(PyptoRank, AbortExitsOneAtOnce) {
  ScratchDir dir;
  FakeCoordinator coord;
  AgentJob job(coord.endpoint(), dir);
  coord.welcome();
  const auto start = std::chrono::steady_clock::now();
  coord.send_all(wire::Abort{"rank 1 failed: kernel reduce_step"});
  const SubprocessResult result = job.wait();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(result.exit_code, 1) << result.describe() << "\n" << result.output;
  EXPECT_NE(result.output.find("aborted by the coordinator: rank 1 failed: kernel reduce_step"),
            std::string::npos)
      << result.output;
}

TEST(PyptoRank, NoCoordinatorExitsThreeAfterTheConnectTimeout) {
  ScratchDir dir;
  FakeCoordinator coord;  // bound, but never answers
  AgentJob job(coord.endpoint(), dir, {"--connect-timeout", "2"});
  const SubprocessResult result = job.wait();
  EXPECT_EQ(result.exit_code, 3) << result.describe() << "\n" << result.output;
  const std::string port = coord.endpoint().substr(coord.endpoint().rfind(':') + 1);
  EXPECT_NE(result.output.find("no coordinator answered at " + coord.endpoint() +
                               " within 2 s; start pypto-coord run <dir> --agents external "
                               "--bind tcp://*:" +
                               port + " first, or check the address and that PYPTO_RUN_KEY is"),
            std::string::npos)
      << result.output;
}

TEST(PyptoRank, WithoutTheRunKeyAnAgentExits3SayingHowTheKeyIsPassed) {
  ScratchDir dir;
  FakeCoordinator coord;
  AgentJob job(coord.endpoint(), dir, {"--connect-timeout", "5"}, "");
  const SubprocessResult result = job.wait();
  EXPECT_EQ(result.exit_code, 3) << result.describe() << "\n" << result.output;
  EXPECT_NE(result.output.find("no run key: neither PYPTO_RUN_KEY nor PYPTO_RUN_KEY_FILE is set"),
            std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("mpirun -x PYPTO_RUN_KEY"), std::string::npos) << result.output;
}

TEST(PyptoRank, AnAgentWithAnotherRunsKeyIsNeverAnswered) {
  ScratchDir dir;
  FakeCoordinator coord;
  const wire::RunKeys other = wire::RunKeys::generate();
  AgentJob job(coord.endpoint(), dir, {"--connect-timeout", "2"}, other.agent_key_text());
  // The fake coordinator has no ZAP handler, so the wrong server key is what fails here.
  EXPECT_FALSE(coord.channel().receive(std::chrono::milliseconds(3000)));
  const SubprocessResult result = job.wait();
  EXPECT_EQ(result.exit_code, 3) << result.describe() << "\n" << result.output;
  EXPECT_NE(result.output.find("no coordinator answered at"), std::string::npos) << result.output;
}

TEST(PyptoRank, CoordinatorOfAnotherVersionIsNamed) {
  ScratchDir dir;
  FakeCoordinator coord;
  AgentJob job(coord.endpoint(), dir);
  for (auto& [rank, hello] : coord.expect_all(MessageType::kHello)) {
    // A REFUSE from a coordinator of the next version: bytes 4..7 of frame 0.
    auto frames = wire::encode_routed(
        coord.identity(rank),
        wire::Refuse{"other version", wire::kProtocolVersion + 1, wire::kProtocolVersion});
    static_cast<uint8_t*>(frames[1].data())[4] = wire::kProtocolVersion + 1;
    zmq::send_multipart(coord.channel().socket(), frames);
  }
  const SubprocessResult result = job.wait();
  EXPECT_EQ(result.exit_code, 3) << result.describe() << "\n" << result.output;
  // Whichever rank reports first (mpirun may stop the other one).
  EXPECT_NE(result.output.find("the coordinator speaks control protocol " +
                                std::to_string(wire::kProtocolVersion + 1) + ", this agent (rank "),
            std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find(") speaks " + std::to_string(wire::kProtocolVersion) +
                               "; use pypto-rank and pypto-coord from the same installation"),
            std::string::npos)
      << result.output;
}

TEST(PyptoRank, SilentCoordinatorExitsThree) {
  ScratchDir dir;
  FakeCoordinator coord;
  AgentJob job(coord.endpoint(), dir);
  coord.welcome(/*heartbeat_ms=*/200, /*deadline_ms=*/1500);
  const SubprocessResult result = job.wait();  // the fake never speaks again
  EXPECT_EQ(result.exit_code, 3) << result.describe() << "\n" << result.output;
  EXPECT_NE(result.output.find("lost the coordinator at " + coord.endpoint() + ": silent for "),
            std::string::npos)
      << result.output;
}

TEST(PyptoRank, BadFlagIsAUsageErrorAndVersionNamesTheProtocol) {
  SubprocessResult bad = run_subprocess({PYPTO_RANK_BIN, "--bogus"});
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--bogus"), std::string::npos) << bad.output;
  SubprocessResult version = run_subprocess({PYPTO_RANK_BIN, "--version"});
  EXPECT_EQ(version.exit_code, 0) << version.output;
  EXPECT_NE(version.output.find("control protocol " + std::to_string(wire::kProtocolVersion)),
            std::string::npos)
      << version.output;
}

TEST(AgentOptions, DefaultsSitBesideTheBlobStore) {
  const AgentOptions o = parse_agent_options({"--coord", "tcp://h:5555", "--wait-timeout", "5"});
  EXPECT_EQ(o.wait_timeout, 5000ms);
  EXPECT_EQ(o.connect_timeout, 60000ms);
  const EnvLookup env = [](const char* name) -> std::optional<std::string> {
    if (std::string(name) == "PYPTO_BLOB_STORE") return "/c/pypto/blobs";
    return std::nullopt;
  };
  const AgentPaths paths = resolve_agent_paths(o, "run/7", env);
  EXPECT_EQ(paths.blob_store, fs::path("/c/pypto/blobs"));
  EXPECT_EQ(paths.binary_store, fs::path("/c/pypto/bin"));
  EXPECT_EQ(paths.workspace_parent, fs::path("/c/pypto/workspaces/run_7"));
  EXPECT_THROW(parse_agent_options({"--coord", "h:5555"}), UsageError);
  EXPECT_THROW(parse_agent_options({"--coord", "tcp://h:1", "--connect-timeout", "0"}), UsageError);
}

}  // namespace
}  // namespace pypto::rank
