// How an L3 run fails (docs/launch.md, "After a failure"): a
// kernel error on one rank, kill -9 of an agent mid-dispatch, a wait that is
// never satisfied, agents without a coordinator, a peer of another protocol
// version, and Ctrl-C. Each must end quickly, name the rank and leave no
// process of the run behind.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "common/wire/channel.h"
#include "common/wire/protocol.h"
#include "tests/e2e/chromium_render.h"
#include "tests/e2e/l3_util.h"

namespace pypto::e2e {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::seconds;
using Json = nlohmann::json;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TEST(L3FailureTest, KernelErrorOnOneRankFailsTheRunNamingRankProgramAndKernel) {
  const fs::path dir = copy_fixture("l3_broken/kernel_error_w4", "l3_kernel_error");
  const std::string tag = "kernel_error";
  const auto start = Clock::now();
  CoordResult r = coord({"run", dir.string(), "--validate"}, l3_env(tag));
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_LT(seconds_since(start), 60.0);
  EXPECT_TRUE(contains(r.err, "rank 2")) << r.err;
  EXPECT_TRUE(contains(r.err, "injected failure on rank 2")) << r.err;
  EXPECT_TRUE(contains(r.err, "reduce_step")) << r.err;
  EXPECT_TRUE(survivors(tag).empty());
  EXPECT_FALSE(fs::exists(dir / "outputs/y.npy"));
  EXPECT_TRUE(contains(slurp(dir / "report/run.json"), "\"result\": \"FAIL\"") ||
              contains(slurp(dir / "report/run.json"), "\"result\":\"FAIL\""));
}

TEST(L3FailureTest, ExecMarksAKernelErrorAsFail) {
  const fs::path dir = copy_fixture("l3_broken/kernel_error_w4", "l3_kernel_error_exec");
  CoordResult r = coord({"exec", dir.string()}, l3_env("kernel_error_exec"));
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_EQ(r.out, "PYPTO_EXEC_RESULT=FAIL\n");
  EXPECT_TRUE(survivors("kernel_error_exec").empty());
}

TEST(L3FailureTest, WaitThatIsNeverSatisfiedFailsAfterTheDeadlineWithADiagnostic) {
  const fs::path dir = copy_fixture("l3_broken/wait_forever_w2", "l3_wait_forever");
  const std::string tag = "wait_forever";
  const auto start = Clock::now();
  CoordResult r = coord({"run", dir.string(), "--wait-timeout", "2"}, l3_env(tag));
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_LT(seconds_since(start), 60.0);
  EXPECT_TRUE(contains(r.err, "rank 1")) << r.err;
  EXPECT_TRUE(contains(r.err, "wait")) << r.err;
  EXPECT_TRUE(contains(r.err, "last seen")) << r.err;
  EXPECT_TRUE(survivors(tag).empty());
}

// A stall at world 4 explained from every rank's state (docs/dfx.md "Why a run
// hangs"): one message naming the culprit at the end of the waits, each rank's
// line under it, and the same in report/run.json. One build serves both faults:
// `skip` names a rank that never notifies, `spin` one stuck in a long loop
// before it would (compiled with neither, so the compiler's deadlock check passes).
TEST(L3FailureTest, AStallNamesTheRankThatSkippedItsNotifyOrIsStuckInAKernel) {
  const fs::path work = scratch_dir("l3_stall_diagnosis");
  const fs::path program = work / "stall.ptl";
  std::ofstream(program)
      << "kernel aiv step(inp: in f32[1, 16], out: out f32[1, 16], signal: window i32[WORLD, 1],\n"
         "                skip: i32, spin: i32, iters: i32) {\n"
         "  let me = rank(); let n = world()\n"
         "  if me == spin { for i in 0 .. iters { store(load(inp, [0, 0], [1, 16]), out, [0, 0]) } }\n"
         "  if me != skip { for p in 0 .. n { if p != me { notify(signal, p, [me, 0], 1, add) } } }\n"
         "  for s in 0 .. n { if s != me { wait(signal, [s, 0], ge, 1) } }\n"
         "  store(load(inp, [0, 0], [1, 16]), out, [0, 0])\n"
         "}\n"
         "chip c(inp: in f32[1, 16], out: out f32[1, 16], signal: window i32[WORLD, 1],\n"
         "       skip: i32, spin: i32, iters: i32) {\n"
         "  step(inp, out, signal, skip, spin, iters)\n"
         "}\n"
         "host main(x: in f32[WORLD, 1, 16], y: out f32[WORLD, 1, 16], skip: i32, spin: i32,\n"
         "          iters: i32) {\n"
         "  let signal = window_buffer(i32[WORLD, 1])\n"
         "  for r in 0 .. WORLD { c(x[r], y[r], signal, skip, spin, iters) on r }\n"
         "}\n";
  const fs::path dir = work / "build";
  CoordResult c = run_split({PYPTO_COMPILE_BIN, program.string(), "-o", dir.string(), "--world",
                             "4", "--scalar", "skip=-1", "--scalar", "spin=-1", "--scalar",
                             "iters=0"});
  ASSERT_EQ(c.exit_code, 0) << c.all();
  // The error, once: its first line and one line per rank.
  auto lines_of_error = [](const std::string& err) {
    std::vector<std::string> lines;
    const size_t at = err.find("pypto-coord: error: ");
    if (at == std::string::npos) return lines;
    std::istringstream in(err.substr(at));
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  };

  // Rank 2 skips its notifies: the others wait for row 2 of 'signal'.
  CoordResult r = coord({"run", dir.string(), "--scalar", "skip=2", "--wait-timeout", "2"},
                        l3_env("stall_skip"));
  EXPECT_EQ(r.exit_code, 1) << r.all();
  std::vector<std::string> lines = lines_of_error(r.err);
  ASSERT_EQ(lines.size(), 5u) << r.err;
  EXPECT_EQ(lines[0],
            "pypto-coord: error: dispatch d0 of program 'c' stalled: rank 2 is the likely "
            "culprit: it finished dispatch d0 (program 'c') without notifying 'signal'[2, 0] on "
            "ranks 0-1, 3");
  for (int rank : {0, 1, 3}) {
    const std::string& line = lines[static_cast<size_t>(rank) + 1];
    EXPECT_TRUE(contains(line, "  rank " + std::to_string(rank) + ": wait")) << line;
    EXPECT_TRUE(contains(line, "on 'signal'[2, 0] ge 1 (now 0) for rank 2")) << line;
  }
  EXPECT_EQ(lines[3], "  rank 2: finished dispatch d0 (program 'c')");
  // A wait whose deadline passed names its line of the program, not the generated C++.
  EXPECT_TRUE(contains(r.err, "expected value ge 1, last seen 0")) << r.err;
  EXPECT_TRUE(contains(r.err, "(at " + program.string() + ":6)")) << r.err;
  EXPECT_EQ(r.err.find("aborted by the coordinator"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("non-zero"), std::string::npos) << r.err;  // no mpirun banner
  const Json report = Json::parse(slurp(dir / "report/run.json"));
  EXPECT_EQ(report["result"], "FAIL");
  EXPECT_EQ(report["diagnosis"]["culprits"], Json::array({2}));
  EXPECT_EQ(report["diagnosis"]["ranks"][2]["state"], "finished");
  EXPECT_EQ(report["diagnosis"]["ranks"][0]["waits_for"], Json::array({2}));
  EXPECT_TRUE(survivors("stall_skip").empty());
  // The failed run's page shows the diagnosis, and Chromium renders it cleanly.
  const std::string html = slurp(dir / "report/run.html");
  EXPECT_TRUE(contains(html, "rank 2 is the likely culprit")) << html;
  if (fs::exists(kChromium)) {
    const Rendering page = render(dir / "report/run.html", "stalled_run_html");
    EXPECT_EQ(page.exit_code, 0) << page.log;
    EXPECT_FALSE(contains(page.log, ":CONSOLE")) << page.log;
    EXPECT_GT(page.png_bytes, 0u) << page.log;
  }

  // Rank 1 loops for a long time before it would notify: it is named, not the
  // first rank whose wait expired.
  r = coord({"run", dir.string(), "--scalar", "spin=1", "--scalar", "iters=2000000000",
             "--wait-timeout", "2"},
            l3_env("stall_spin"));
  EXPECT_EQ(r.exit_code, 1) << r.all();
  lines = lines_of_error(r.err);
  ASSERT_EQ(lines.size(), 5u) << r.err;
  EXPECT_TRUE(contains(lines[0],
                       "pypto-coord: error: dispatch d0 of program 'c' stalled: rank 1 is the "
                       "likely culprit: it is still in kernel 'step' (task 0 on aiv core "))
      << lines[0];
  EXPECT_TRUE(contains(lines[2], "  rank 1: in dispatch d0 (program 'c'), in kernel 'step'"))
      << lines[2];
  for (int rank : {0, 2, 3})
    EXPECT_TRUE(contains(lines[static_cast<size_t>(rank) + 1], "for rank 1")) << lines[rank + 1];
  EXPECT_EQ(Json::parse(slurp(dir / "report/run.json"))["diagnosis"]["ranks"][1]["tasks"][0]["kernel"],
            "step");
  EXPECT_TRUE(survivors("stall_spin").empty());
}

// Starts the slow fixture in the background and waits until rank `rank` runs its dispatch.
Background start_slow_run(const std::string& tag, const std::string& name) {
  const fs::path dir = copy_fixture("l3_broken/slow_w2", name);
  Background coordinator = start_background(
      {kCoordBin.string(), "run", dir.string(), "--log-level", "debug"}, l3_env(tag), name);
  EXPECT_TRUE(wait_for_text(coordinator.err, "sent dispatch d0", seconds(90)))
      << coordinator.stderr_text();
  // Let the kernels start (they sleep in slices for ~20 s).
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  return coordinator;
}

// slow_w2 submits one task per rank, which the agent runs on its worker thread
// (no core thread to hand it to): the runtime cannot fail it at the deadline
// from the thread it is stuck on, so the agent's control thread does.
TEST(L3FailureTest, ALoneTaskPastTheDispatchDeadlineEndsTheRunNamingItsKernel) {
  const fs::path dir = copy_fixture("l3_broken/slow_w2", "l3_lone_timeout");
  const std::string tag = "lone_timeout";
  const auto start = Clock::now();
  CoordResult r = coord({"run", dir.string(), "--timeout", "1"}, l3_env(tag));
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_LT(seconds_since(start), 15.0) << "the run waited for the 20 s kernels";
  EXPECT_TRUE(contains(r.err, "dispatch d0 (program 'slow_orch') still running 1 s after the "
                              "dispatch deadline of 1 s: 1 task(s) still running (a kernel that "
                              "never returns?): task 0 'slow_copy' on aiv core "))
      << r.err;
  EXPECT_TRUE(survivors(tag).empty());
}

// A kernel that ends its process with _exit(0): not a signal, not a crash, but an
// exit with status 0 during the dispatch, as mpirun reports it (docs/errors.md).
TEST(L3FailureTest, AKernelThatExitsWithStatusZeroIsNamedWithThatStatus) {
  const fs::path dir = copy_fixture("l3_broken/slow_w2", "l3_exit_zero");
  const fs::path kernel = dir / "next_levels/1/kernels/aiv/slow_copy.cpp";
  std::string source = slurp(kernel);
  const std::string entry = "extern \"C\" void kernel_entry(const pypto_kernel_args* args) {";
  const size_t at = source.find(entry);
  ASSERT_NE(at, std::string::npos);
  source.replace(at, entry.size(), "#include <unistd.h>\n" + entry + "\n  _exit(0);");
  spit(kernel, source);
  const std::string tag = "exit_zero";
  const auto start = Clock::now();
  CoordResult r = coord({"run", dir.string()}, l3_env(tag));
  EXPECT_EQ(r.exit_code, 1) << r.all();
  EXPECT_LT(seconds_since(start), 60.0);
  EXPECT_TRUE(contains(r.err, "rank 1 (pid ")) << r.err;
  EXPECT_TRUE(contains(r.err, "exited with status 0")) << r.err;
  EXPECT_TRUE(contains(r.err, "dispatch d0 (program 'slow_orch')")) << r.err;
  EXPECT_FALSE(contains(r.err, "killed")) << r.err;
  EXPECT_TRUE(survivors(tag).empty());
}

TEST(L3FailureTest, KillMinus9OfOneAgentMidDispatchFailsNamingThatRankWithin5Seconds) {
  const std::string tag = "kill9";
  Background coordinator = start_slow_run(tag, "l3_kill9");
  const pid_t victim = agent_pid(tag, 1);
  ASSERT_GT(victim, 0) << coordinator.stderr_text();
  const auto start = Clock::now();
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  const auto status = coordinator.job.wait_for(seconds(5));
  ASSERT_TRUE(status) << "pypto-coord still runs 5 s after kill -9 of rank 1\n"
                      << coordinator.stderr_text();
  EXPECT_LT(seconds_since(start), 5.0);
  EXPECT_EQ(status->code, 1) << coordinator.stderr_text();
  const std::string err = coordinator.stderr_text();
  EXPECT_TRUE(contains(err, "rank 1 (pid " + std::to_string(victim))) << err;
  EXPECT_TRUE(contains(err, "was killed by SIGKILL")) << err;
  EXPECT_TRUE(survivors(tag).empty());
}

TEST(L3FailureTest, CtrlCStopsEveryAgent) {
  const std::string tag = "ctrl_c";
  Background coordinator = start_slow_run(tag, "l3_ctrl_c");
  ASSERT_GT(agent_pid(tag, 0), 0);
  const auto start = Clock::now();
  // The shell wrapper exec'd pypto-coord, so the job's leader is pypto-coord itself.
  ASSERT_EQ(::kill(coordinator.job.pid(), SIGINT), 0);
  const auto status = coordinator.job.wait_for(seconds(10));
  ASSERT_TRUE(status) << coordinator.stderr_text();
  EXPECT_LT(seconds_since(start), 10.0);
  EXPECT_EQ(status->code, 130) << coordinator.stderr_text();
  EXPECT_TRUE(contains(coordinator.stderr_text(), "interrupted by SIGINT"))
      << coordinator.stderr_text();
  EXPECT_TRUE(survivors(tag).empty());
}

TEST(L3FailureTest, AgentsWithoutACoordinatorExitWithAClearMessage) {
  const int port = free_tcp_port();
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(port);
  const auto start = Clock::now();
  std::vector<std::string> env = l3_env("no_coord");
  env.push_back("PYPTO_RUN_KEY=" + wire::RunKeys::generate().agent_key_text());
  CoordResult r = run_split({kMpirun.string(), "--allow-run-as-root", "--oversubscribe", "-n", "2",
                             kRankBin.string(), "--coord", endpoint, "--connect-timeout", "2"},
                            env);
  EXPECT_NE(r.exit_code, 0) << r.all();
  EXPECT_LT(seconds_since(start), 30.0);
  EXPECT_TRUE(contains(r.all(), "no coordinator answered at " + endpoint)) << r.all();
  EXPECT_TRUE(survivors("no_coord").empty());
}

TEST(L3FailureTest, AnAgentOfAnotherProtocolVersionIsRefusedNamingBothVersions) {
  const fs::path dir = copy_fixture("l3/allreduce_w2", "l3_version");
  const int port = free_tcp_port();
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(port);
  Background coordinator = start_background(
      {kCoordBin.string(), "run", dir.string(), "--agents", "external", "--bind", endpoint},
      l3_env("version"), "version_coord");

  // A raw DEALER playing rank 0 of the next protocol version, with the run's key.
  const wire::AgentKey key = wire::parse_agent_key(printed_run_key(coordinator), "the output");
  zmq::context_t context;
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.set(zmq::sockopt::curve_serverkey, key.server_public);
  dealer.set(zmq::sockopt::curve_publickey, key.client.public_key);
  dealer.set(zmq::sockopt::curve_secretkey, key.client.secret_key);
  dealer.connect(endpoint);
  std::string frame = "PPTO";
  const uint32_t version = wire::kProtocolVersion + 1;
  frame.append(reinterpret_cast<const char*>(&version), 4);
  const int32_t rank = 0;
  frame.append(reinterpret_cast<const char*>(&rank), 4);
  frame += "whatever the next protocol looks like";
  dealer.send(zmq::buffer(frame));
  zmq::pollitem_t item{dealer.handle(), 0, ZMQ_POLLIN, 0};
  ASSERT_EQ(zmq::poll(&item, 1, std::chrono::seconds(30)), 1) << "no REFUSE came back";
  zmq::message_t reply;
  ASSERT_TRUE(dealer.recv(reply));
  std::vector<zmq::message_t> frames;
  frames.push_back(std::move(reply));
  const wire::Decoded refusal = wire::decode(frames, {wire::Role::kAgent, 0});
  ASSERT_TRUE(refusal.is<wire::Refuse>());

  const auto status = coordinator.job.wait_for(seconds(10));
  ASSERT_TRUE(status);
  EXPECT_EQ(status->code, 3);
  const std::string expected = "agent rank 0 speaks control protocol " + std::to_string(version) +
                               ", this coordinator speaks " +
                               std::to_string(wire::kProtocolVersion);
  EXPECT_TRUE(contains(coordinator.stderr_text(), expected)) << coordinator.stderr_text();
}

}  // namespace
}  // namespace pypto::e2e
