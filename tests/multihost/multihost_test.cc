// L3 runs across simulated hosts (tests/multihost/simhosts, docs/multihost-testing.md):
// every L3 fixture and example validated across two hosts with the embedded
// launcher (4 + 4) and with the user's own mpirun (3 + 5), the data plane's
// own tests across hosts, shipping once per host, clock offsets, and what
// happens when a host dies, is cut off, or cannot reach the coordinator.
//
// The hosts are made once per test process (each ctest entry is one
// process) and torn down at its end; every test checks that no process is
// left on any host.
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/e2e/l3_util.h"
#include "tests/multihost/sim_hosts.h"

namespace pypto::multihost {
namespace {

using e2e::CoordResult;
using e2e::contains;
using e2e::slurp;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

inline const fs::path kMpiCommTest = PYPTO_MPI_COMM_TEST_BIN;
constexpr int kHosts = 3;  // h0 and h1 run the ranks; h2 stays out of the jobs

SimHosts* g_hosts = nullptr;
std::string g_unavailable;

class SimHostsEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    if (auto why = SimHosts::unavailable()) {
      g_unavailable = *why;
      return;
    }
    g_hosts = new SimHosts(e2e::scratch_dir("simhosts"), kHosts);
  }
  void TearDown() override {
    delete g_hosts;
    g_hosts = nullptr;
  }
};
// Registered first, so torn down last: after the hosts, the process's scratch goes.
const auto* const g_cleanup = ::testing::AddGlobalTestEnvironment(new e2e::ScratchCleanup);
const auto* const g_environment = ::testing::AddGlobalTestEnvironment(new SimHostsEnvironment);

// What an L3 run needs in its environment: the build tree's binaries. No
// PYPTO_BLOB_STORE: each host keeps its own store under its XDG_CACHE_HOME.
// The simulated hosts share this machine's CPUs: no placement by local rank
// (the other hosts' agents get the same from DIR/ssh).
std::vector<std::string> run_env() {
  return {"PYPTO_RANK=" + e2e::kRankBin.string(), "PYPTO_MPIRUN=" + e2e::kMpirun.string(),
          "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
          "PYPTO_CPU_PLACEMENT=none"};
}

class MultiHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!g_hosts) GTEST_SKIP() << "multi-host tests skipped: " << g_unavailable;
  }
  void TearDown() override {
    if (!g_hosts) return;
    const auto left = g_hosts->leftovers();
    EXPECT_TRUE(left.empty()) << "processes left on the simulated hosts:\n" << describe(left);
    for (const auto& [host, pids] : left)
      for (pid_t pid : pids) ::kill(pid, SIGKILL);
  }
  const SimHosts& hosts() const { return *g_hosts; }

  // pypto-coord ARGS... run on h0.
  CoordResult coord_on_h0(const std::vector<std::string>& args) const {
    std::vector<std::string> argv{e2e::kCoordBin.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return e2e::run_split(hosts().on(0, argv), run_env());
  }

  // Embedded: `pypto-coord run DIR --validate --hostfile F` with the rsh stand-in.
  // `mpirun_args`: more of them after the rsh stand-in's.
  CoordResult run_embedded(const fs::path& dir, const fs::path& hostfile,
                           std::vector<std::string> extra = {},
                           const std::string& mpirun_args = "") const {
    std::vector<std::string> args{"run",
                                  dir.string(),
                                  "--validate",
                                  "--hostfile",
                                  hostfile.string(),
                                  "--mpirun-args",
                                  hosts().rsh_agent_args() + " " + mpirun_args};
    args.insert(args.end(), extra.begin(), extra.end());
    return coord_on_h0(args);
  }
};

// The world size a build declares.
int world_of(const fs::path& dir) {
  return json::parse(slurp(dir / "distributed_meta.json"))["world_size"].get<int>();
}

// run.json's hosts: host name -> its ranks.
std::map<std::string, std::vector<int>> hosts_in_report(const fs::path& dir) {
  std::map<std::string, std::vector<int>> out;
  const json report = json::parse(slurp(dir / "report/run.json"));
  for (const json& host : report.at("hosts"))
    out[host.at("host").get<std::string>()] = host.at("ranks").get<std::vector<int>>();
  return out;
}

std::vector<int> iota(int from, int to) {
  std::vector<int> out;
  for (int r = from; r < to; ++r) out.push_back(r);
  return out;
}

// ---- the builds: every L3 fixture and example ----

struct Build {
  std::string name;
  std::string fixture;  // tests/fixtures/<fixture>, or
  std::string example;  // examples/<example> compiled at --world 8
};

std::vector<Build> all_builds() {
  return {{"allreduce_w8", "l3/allreduce_w8", ""},
          {"allreduce_w8_edited", "l3/allreduce_w8_edited", ""},
          {"mpmd_w8", "l3/mpmd_w8", ""},
          {"ring_shift_w8", "l3/ring_shift_w8", ""},
          {"allreduce_w2", "l3/allreduce_w2", ""},
          {"accumulate_w2", "l3/accumulate_w2", ""},
          {"example_allreduce", "", "allreduce.ptl"},
          {"example_tp_linear", "", "tp_linear.ptl"},
          {"example_row_parallel", "", "row_parallel.ptl"},
          {"example_moe_all_to_all", "", "moe_all_to_all.ptl"},
          {"example_ring_allreduce", "", "ring_allreduce.ptl"}};
}

// A fresh copy of the build (fixtures) or a fresh compile (examples).
fs::path materialize(const Build& build, const std::string& mode) {
  const std::string name = build.name + "_" + mode;
  if (!build.fixture.empty()) return e2e::copy_fixture(build.fixture, name);
  const fs::path dir = e2e::scratch_dir(name);
  const CoordResult c = e2e::pypto_compile(e2e::kExamples / build.example, dir, 8);
  if (c.exit_code != 0) ADD_FAILURE() << "pypto-compile " << build.example << ":\n" << c.all();
  return dir;
}

// Two hosts for a world: `first` ranks on h0, the rest on h1 (by slots, in order).
fs::path split_hostfile(const SimHosts& hosts, int world, int first, const std::string& name) {
  return hosts.hostfile({first, world - first}, name);
}

class EveryBuildTest : public MultiHostTest, public ::testing::WithParamInterface<Build> {};

TEST_P(EveryBuildTest, EmbeddedLauncherFourPlusFourValidates) {
  const Build& build = GetParam();
  const fs::path dir = materialize(build, "embedded");
  const int world = world_of(dir);
  const int first = world / 2;
  const fs::path hostfile = split_hostfile(hosts(), world, first, build.name + ".embedded.hosts");
  const CoordResult r = run_embedded(dir, hostfile);
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "validation: passed")) << r.out;
  // The ranks really ran on both hosts, split as the hostfile says.
  const auto placed = hosts_in_report(dir);
  ASSERT_EQ(placed.size(), 2u) << slurp(dir / "report/run.json");
  EXPECT_EQ(placed.at(hosts().hostname(0)), iota(0, first));
  EXPECT_EQ(placed.at(hosts().hostname(1)), iota(first, world));
  EXPECT_TRUE(contains(r.out, "  host " + hosts().hostname(1) + " (rank")) << r.out;
}

TEST_P(EveryBuildTest, UsersOwnMpirunThreePlusFiveValidates) {
  const Build& build = GetParam();
  const fs::path dir = materialize(build, "external");
  const int world = world_of(dir);
  const int first = world == 8 ? 3 : 1;
  const fs::path hostfile = split_hostfile(hosts(), world, first, build.name + ".external.hosts");
  const int port = e2e::free_tcp_port();
  const std::string endpoint = "tcp://" + hosts().address(0) + ":" + std::to_string(port);
  e2e::Background coordinator = e2e::start_background(
      // --heartbeat-timeout 30: the eight agents and their compilers share the
      // machine's two CPUs with the rest of the suite (-j2); under that load one
      // agent's control channel was seen silent both ways for 10 s during prepare
      // (cause not found yet). Liveness under load is fault_injection_test.cc's subject.
      hosts().on(0, {e2e::kCoordBin.string(), "run", dir.string(), "--validate", "--agents",
                     "external", "--bind", endpoint, "--startup-timeout", "120",
                     "--heartbeat-timeout", "30"}),
      run_env(), build.name + "_external_coord");
  // What a cluster user types on the launch host: the command the coordinator
  // printed, its run key carried to every host by -x (never in the argv).
  const std::string key = e2e::printed_run_key(coordinator);
  ASSERT_EQ(key.size(), 80u) << coordinator.stderr_text();
  std::vector<std::string> env = run_env();
  env.push_back("PYPTO_RUN_KEY=" + key);
  const CoordResult agents = e2e::run_split(
      hosts().on(0, {e2e::kMpirun.string(), "--allow-run-as-root", "--hostfile", hostfile.string(),
                     "--mca", "plm_rsh_agent", hosts().ssh(), "--bind-to", "none", "-x",
                     "PYPTO_RUN_KEY", "-n", std::to_string(world), e2e::kRankBin.string(),
                     "--coord", endpoint}),
      env);
  EXPECT_EQ(agents.exit_code, 0) << agents.all();
  const auto status = coordinator.job.wait_for(std::chrono::seconds(120));
  ASSERT_TRUE(status) << "the coordinator did not finish";
  EXPECT_EQ(status->code, 0) << coordinator.stdout_text() << coordinator.stderr_text();
  EXPECT_TRUE(contains(coordinator.stdout_text(), "validation: passed"))
      << coordinator.stdout_text() << coordinator.stderr_text();
  const auto placed = hosts_in_report(dir);
  ASSERT_EQ(placed.size(), 2u) << slurp(dir / "report/run.json");
  EXPECT_EQ(placed.at(hosts().hostname(0)), iota(0, first));
  EXPECT_EQ(placed.at(hosts().hostname(1)), iota(first, world));
}

INSTANTIATE_TEST_SUITE_P(AcrossTwoHosts, EveryBuildTest, ::testing::ValuesIn(all_builds()),
                         [](const auto& info) { return info.param.name; });

// ---- the data plane alone: rank_agent/mpi_comm_test_main.cc across hosts ----

TEST_F(MultiHostTest, WindowTestsPassAcrossHostsWithoutMcaFlags) {
  const fs::path hostfile = hosts().hostfile({2, 2}, "comm.hosts");
  // No OMPI_MCA_osc from the user: the agents choose (rank_agent/one_sided_env.h).
  const CoordResult r = e2e::run_split(
      hosts().on(0, {e2e::kMpirun.string(), "--allow-run-as-root", "--hostfile", hostfile.string(),
                     "--mca", "plm_rsh_agent", hosts().ssh(), "--bind-to", "none", "-n", "4",
                     kMpiCommTest.string()}),
      run_env());
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_TRUE(contains(r.out + r.err, "[  PASSED  ]")) << r.all();
}

TEST_F(MultiHostTest, ForcedPt2ptWithoutSerializedSaysWhatToSet) {
  const fs::path dir = e2e::copy_fixture("l3/allreduce_w2", "pt2pt_multiple");
  const fs::path hostfile = hosts().hostfile({1, 1}, "pt2pt.hosts");
  const CoordResult r = run_embedded(dir, hostfile, {}, "-x OMPI_MCA_osc=pt2pt");
  EXPECT_EQ(r.exit_code, 3) << r.all();
  EXPECT_TRUE(contains(r.err, "OMPI_MCA_osc=pt2pt is set: unset it")) << r.all();
  EXPECT_TRUE(contains(r.err, "PYPTO_MPI_THREAD=serialized")) << r.all();
}

// ---- shipping: once per host, nothing the second time ----

TEST_F(MultiHostTest, FilesCrossTheLinkOncePerHostAndNotAgain) {
  // A build no other test of this process ships, so both hosts' stores start
  // without its files.
  const fs::path dir = e2e::copy_fixture("l3/allreduce_w8", "ship_once");
  // A comment outside the ptoas sentinels: the same new source on every rank.
  for (int r = 0; r < 8; ++r) {
    const fs::path kernel =
        dir / ("next_levels/" + std::to_string(r) + "/orchestration/chip_orch.cpp");
    e2e::spit(kernel, slurp(kernel) + "\n// ship_once\n");
  }
  const fs::path hostfile = hosts().hostfile({4, 4}, "ship.hosts");

  const CoordResult first = run_embedded(dir, hostfile);
  ASSERT_EQ(first.exit_code, 0) << first.all();
  json report = json::parse(slurp(dir / "report/run.json"));
  ASSERT_EQ(report.at("hosts").size(), 2u);
  const json& h0 = report["hosts"][0];
  const json& h1 = report["hosts"][1];
  // The edited file is new to both hosts; each receives it once, not once per rank.
  EXPECT_GE(h0.at("blobs_shipped").get<int>(), 1) << report.dump(2);
  EXPECT_EQ(h0.at("blobs_shipped"), h1.at("blobs_shipped")) << report.dump(2);
  EXPECT_EQ(h0.at("bytes_shipped"), h1.at("bytes_shipped")) << report.dump(2);
  const uint64_t per_rank_files = report["ranks"][0].at("files").get<uint64_t>();
  EXPECT_LT(h0.at("blobs_shipped").get<uint64_t>(), 4 * per_rank_files) << report.dump(2);

  const CoordResult second = run_embedded(dir, hostfile);
  ASSERT_EQ(second.exit_code, 0) << second.all();
  report = json::parse(slurp(dir / "report/run.json"));
  for (const json& host : report.at("hosts")) {
    EXPECT_EQ(host.at("bytes_shipped").get<uint64_t>(), 0u) << report.dump(2);
    EXPECT_EQ(host.at("compiles").get<uint64_t>(), 0u) << report.dump(2);
  }
  EXPECT_TRUE(contains(second.out, "0 bytes shipped")) << second.out;
}

// ---- clocks: each host's offset recorded for DFX ----

TEST_F(MultiHostTest, ClockOffsetsAreRecordedPerHostAndDispatch) {
  const fs::path dir = e2e::copy_fixture("l3/allreduce_w2", "clock_offsets");
  const CoordResult r = run_embedded(dir, hosts().hostfile({1, 1}, "clock.hosts"));
  ASSERT_EQ(r.exit_code, 0) << r.all();
  const json report = json::parse(slurp(dir / "report/run.json"));
  for (const json& host : report.at("hosts")) {
    // The simulated hosts share this machine's clock: the measured offset is
    // within the round trip of 0, and a round trip was measured.
    const int64_t rtt = host.at("clock_rtt_ns").get<int64_t>();
    EXPECT_GT(rtt, 0) << report.dump(2);
    EXPECT_LE(std::abs(host.at("clock_offset_ns").get<int64_t>()), rtt) << report.dump(2);
  }
  const json dispatch = json::parse(slurp(dir / "dfx_outputs/rank1/d0/dispatch_program.json"));
  EXPECT_TRUE(dispatch.contains("clock_offset_ns")) << dispatch.dump(2);
  EXPECT_EQ(dispatch.at("host"), hosts().hostname(1));
}

// ---- failures across hosts ----

// pypto-coord run of the slow fixture (each kernel sleeps 20 s) in the background on h0.
e2e::Background start_slow_run(const SimHosts& hosts, const fs::path& dir,
                               const std::vector<std::string>& extra, const std::string& name) {
  std::vector<std::string> argv{e2e::kCoordBin.string(), "run",        dir.string(),
                                "--hostfile",            hosts.hostfile({1, 1}, name + ".hosts").string(),
                                "--mpirun-args",         hosts.rsh_agent_args()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return e2e::start_background(hosts.on(0, argv), run_env(), name);
}

// Waits until the slow dispatch runs on h1 (its pypto-rank exists and the
// coordinator has logged the dispatch), at most `timeout`.
bool wait_for_dispatch(const SimHosts& hosts, const e2e::Background& run,
                       std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    for (pid_t pid : hosts.processes(1)) {
      std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
      std::string name;
      std::getline(comm, name);
      if (name == "pypto-rank" && contains(run.stderr_text(), "sent dispatch d0")) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

TEST_F(MultiHostTest, HostKilledMidDispatchFailsNamingTheHostAndItsRanks) {
  const fs::path dir = e2e::copy_fixture("l3_broken/slow_w2", "host_killed");
  e2e::Background run = start_slow_run(hosts(), dir, {"--log-level", "debug"}, "host_killed");
  ASSERT_TRUE(wait_for_dispatch(hosts(), run, std::chrono::seconds(90)))
      << run.stdout_text() << run.stderr_text();
  const auto killed = Clock::now();
  hosts().kill_all(1);
  const auto status = run.job.wait_for(std::chrono::seconds(30));
  ASSERT_TRUE(status) << "pypto-coord did not exit";
  const double seconds =
      std::chrono::duration<double>(Clock::now() - killed).count();
  EXPECT_EQ(status->code, 1) << run.stderr_text();
  EXPECT_LE(seconds, 5.0) << run.stderr_text();
  const std::string err = run.stderr_text();
  EXPECT_TRUE(contains(err, "host " + hosts().hostname(1))) << err;
  EXPECT_TRUE(contains(err, "rank 1")) << err;
}

TEST_F(MultiHostTest, PartitionedHostFailsWithinTheHeartbeatDeadline) {
  const fs::path dir = e2e::copy_fixture("l3_broken/slow_w2", "partition");
  e2e::Background run = start_slow_run(
      hosts(), dir, {"--log-level", "debug", "--heartbeat-timeout", "3"}, "partition");
  ASSERT_TRUE(wait_for_dispatch(hosts(), run, std::chrono::seconds(90)))
      << run.stdout_text() << run.stderr_text();
  const auto cut = Clock::now();
  hosts().set_link(1, false);
  const auto status = run.job.wait_for(std::chrono::seconds(30));
  const double seconds = std::chrono::duration<double>(Clock::now() - cut).count();
  hosts().set_link(1, true);  // so what was left on h1 hears its peers are gone
  ASSERT_TRUE(status) << "pypto-coord did not exit";
  EXPECT_EQ(status->code, 1) << run.stderr_text();
  // The error comes at the deadline; stopping a job whose daemon cannot be reached
  // takes on top the 3 s the coordinator gives mpirun to stop by itself before it
  // kills it (kSelfStopGrace, coordinator/distributed_worker.cc), and the reaping.
  EXPECT_LE(seconds, 3.0 + 3.0 + 3.0) << run.stderr_text();
  EXPECT_TRUE(contains(run.stderr_text(), "heartbeat timeout 3 s")) << run.stderr_text();
  const std::string err = run.stderr_text();
  EXPECT_TRUE(contains(err, "host " + hosts().hostname(1))) << err;
  EXPECT_TRUE(contains(err, "silent")) << err;
}

TEST_F(MultiHostTest, RankThatCannotReachTheCoordinatorIsInfraNamingTheAddress) {
  // An address of h0 that h1 has no route to.
  const SubprocessResult island =
      run_simhosts({"island", hosts().dir().string(), "h0"});
  ASSERT_EQ(island.exit_code, 0) << island.output;
  std::string address = island.output;
  address.erase(address.find_last_not_of("\n") + 1);
  const fs::path dir = e2e::copy_fixture("l3/allreduce_w2", "unreachable");
  const std::string endpoint = "tcp://" + address + ":" + std::to_string(e2e::free_tcp_port());
  const auto start = Clock::now();
  const CoordResult r = run_embedded(dir, hosts().hostfile({1, 1}, "unreachable.hosts"),
                                     {"--bind", endpoint, "--startup-timeout", "8"});
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 3) << r.all();
  EXPECT_TRUE(contains(r.err, endpoint)) << r.all();
  EXPECT_TRUE(contains(r.err, "missing rank(s) 1")) << r.all();
  EXPECT_LE(seconds, 8.0 + 10.0) << r.all();
}

// An impostor on a third host that knows the port but not the run's key: its
// handshake is refused and logged, and the run across h0 and h1 still passes.
TEST_F(MultiHostTest, ImpostorOnAThirdHostWithoutTheKeyIsRefused) {
  const fs::path dir = e2e::copy_fixture("l3/allreduce_w2", "impostor");
  const int port = e2e::free_tcp_port();
  const std::string endpoint = "tcp://" + hosts().address(0) + ":" + std::to_string(port);
  e2e::Background coordinator = e2e::start_background(
      hosts().on(0, {e2e::kCoordBin.string(), "run", dir.string(), "--validate", "--agents",
                     "external", "--bind", endpoint, "--startup-timeout", "120"}),
      run_env(), "impostor_coord");
  const std::string key = e2e::printed_run_key(coordinator);
  ASSERT_EQ(key.size(), 80u) << coordinator.stderr_text();
  // The impostor: a real pypto-rank on h2 pointed at the port, with a key of its
  // own making (well formed, not the run's).
  std::string forged = key;
  for (size_t i = 40; i < forged.size(); ++i) forged[i] = forged[i] == 'a' ? 'b' : 'a';
  std::vector<std::string> impostor_env = run_env();
  impostor_env.push_back("PYPTO_RUN_KEY=" + forged);
  const CoordResult impostor = e2e::run_split(
      hosts().on(2, {e2e::kMpirun.string(), "--allow-run-as-root", "-n", "1",
                     e2e::kRankBin.string(), "--coord", endpoint, "--connect-timeout", "5"}),
      impostor_env);
  EXPECT_NE(impostor.exit_code, 0) << impostor.all();
  // The real agents, on h0 and h1, with the key.
  std::vector<std::string> env = run_env();
  env.push_back("PYPTO_RUN_KEY=" + key);
  const CoordResult agents = e2e::run_split(
      hosts().on(0, {e2e::kMpirun.string(), "--allow-run-as-root", "--hostfile",
                     hosts().hostfile({1, 1}, "impostor.hosts").string(), "--mca",
                     "plm_rsh_agent", hosts().ssh(), "--bind-to", "none", "-x", "PYPTO_RUN_KEY",
                     "-n", "2", e2e::kRankBin.string(), "--coord", endpoint}),
      env);
  EXPECT_EQ(agents.exit_code, 0) << agents.all();
  const auto status = coordinator.job.wait_for(std::chrono::seconds(120));
  ASSERT_TRUE(status) << "the coordinator did not finish";
  EXPECT_EQ(status->code, 0) << coordinator.stderr_text();
  EXPECT_TRUE(contains(coordinator.stdout_text(), "validation: passed"))
      << coordinator.stdout_text() << coordinator.stderr_text();
  // Refused at the handshake and logged with the impostor's address.
  EXPECT_TRUE(contains(coordinator.stderr_text(), hosts().address(2)))
      << coordinator.stderr_text();
  EXPECT_EQ(hosts_in_report(dir).count(hosts().hostname(2)), 0u);
}

TEST_F(MultiHostTest, LoopbackBindWithOtherHostsIsRefused) {
  const fs::path dir = e2e::copy_fixture("l3/allreduce_w2", "loopback_bind");
  const CoordResult r =
      run_embedded(dir, hosts().hostfile({1, 1}, "loopback.hosts"), {"--bind", "tcp://127.0.0.1:*"});
  EXPECT_EQ(r.exit_code, 2) << r.all();
  EXPECT_TRUE(contains(r.err, "is a loopback address, which the ranks on " + hosts().address(1)))
      << r.all();
}

}  // namespace
}  // namespace pypto::multihost
