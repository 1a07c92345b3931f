#include "coordinator/cli.h"

#include <CLI/CLI.hpp>

#include <csignal>
#include <iostream>
#include <optional>
#include <string>

#include "common/fs_util.h"
#include "common/heap.h"
#include "common/log.h"
#include "common/version.h"
#include "coordinator/bench_command.h"
#include "coordinator/exec_command.h"
#include "coordinator/inspect_command.h"
#include "coordinator/interrupt.h"
#include "coordinator/replay_command.h"
#include "coordinator/run_command.h"
#include "coordinator/timeline_command.h"
#include "pypto/error.h"

namespace pypto::coord {

namespace {

struct GlobalOptions {
  std::optional<std::string> log_level;
};

void add_log_level(CLI::App& cmd, GlobalOptions& global) {
  cmd.add_option("--log-level", global.log_level,
                 "debug, info, timing, warn, error or null (default: $PYPTO_RUNTIME_LOG, else "
                 "info)");
}

}  // namespace

int pypto_coord_main(int argc, char** argv) {
  keep_large_blocks_in_heap();  // host tensors and frames of every run reuse pages
  // A reader that went away (exec --manifest killed while this entry runs) must not
  // kill this process with SIGPIPE before it has stopped its agents: writes fail instead.
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{"pypto-coord: load a PyPTO build directory and drive it"};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text("pypto-coord"));
  GlobalOptions global;

  InspectArgs inspect;
  CLI::App* inspect_cmd = app.add_subcommand(
      "inspect", "Describe a build directory: kind, platform, ranks, programs, kernels, cache");
  inspect_cmd->add_option("dir", inspect.dir, "build directory")
      ->required()
      ->transform(normal_path);
  inspect_cmd->add_flag("--json", inspect.json, "print the description as JSON");
  inspect_cmd->add_option("--binary-store", inspect.binary_store,
                          "L3: the host-wide binary store whose cache state to show (default: "
                          "pypto-rank's, bin/ beside the blob store $PYPTO_BLOB_STORE, else "
                          "$XDG_CACHE_HOME/pypto/blobs, else ~/.cache/pypto/blobs)");
  add_log_level(*inspect_cmd, global);

  RunArgs run;
  CLI::App* run_cmd = app.add_subcommand(
      "run", "Run a build directory once: golden or --input data in, outputs to <dir>/outputs/");
  add_run_args(*run_cmd, run);
  add_log_level(*run_cmd, global);

  ReplayArgs replay;
  CLI::App* replay_cmd = app.add_subcommand(
      "replay", "Re-run a build after hand edits: splice .pto, invalidate the cache, run");
  add_replay_args(*replay_cmd, replay);
  add_log_level(*replay_cmd, global);

  ExecArgs exec;
  CLI::App* exec_cmd = app.add_subcommand(
      "exec", "CI entry: run and validate, print PYPTO_EXEC_RESULT=PASS|FAIL|INFRA");
  add_exec_args(*exec_cmd, exec);
  add_log_level(*exec_cmd, global);

  BenchArgs bench;
  CLI::App* bench_cmd = app.add_subcommand(
      "bench", "Timed dispatches: prepare once, run --rounds times, print statistics");
  add_bench_args(*bench_cmd, bench);
  add_log_level(*bench_cmd, global);

  TimelineArgs timeline;
  CLI::App* timeline_cmd = app.add_subcommand(
      "timeline", "Rebuild dfx_outputs/timeline.json (Perfetto) from a run's --swimlane records");
  add_timeline_args(*timeline_cmd, timeline);
  add_log_level(*timeline_cmd, global);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);  // prints help or the parse error
    return code == 0 ? 0 : static_cast<int>(ExitCode::kUsage);
  }

  // A signal stops the compilers or the exec child running at that moment, then
  // exits 128 + the signal; an L3 run's worker takes over while it has agents.
  std::optional<InterruptScope> interrupts;
  try {
    log::init(global.log_level);
    interrupts.emplace(InterruptScope::Mode::kWhileChildren);
    if (*inspect_cmd) return run_inspect(inspect, std::cout);
    if (*run_cmd) return run_run(run, std::cout);
    if (*replay_cmd) return run_replay(replay, std::cout);
    if (*exec_cmd) return run_exec(exec, global.log_level, std::cout, std::cerr);
    if (*bench_cmd) return run_bench(bench, std::cout);
    if (*timeline_cmd) return run_timeline(timeline, std::cout);
  } catch (const InterruptedError& e) {
    std::cerr << "pypto-coord: error: " << e.what() << "\n";
    return InterruptScope::exit_code(InterruptScope::signal_received());
  } catch (const std::exception& e) {
    std::cerr << "pypto-coord: error: " << e.what() << "\n";
    return static_cast<int>(exit_code_of(e));
  }
  return static_cast<int>(ExitCode::kUsage);
}

}  // namespace pypto::coord
