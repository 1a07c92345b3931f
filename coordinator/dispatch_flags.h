// The dispatch flags that run, replay and exec share: platform, device id,
// the five DFX switches, ring overrides, core counts and the dispatch
// deadline (docs/commands.md). Registered on a CLI11 subcommand, turned into
// the RunConfig / CoreCounts / DispatchContext the chip worker takes.
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "pypto/chip_worker.h"
#include "pypto/distributed_worker.h"
#include "pypto/run_config.h"

namespace pypto::coord {

// As parsed; unset optionals fall back to the build, the environment or the defaults.
struct DispatchFlags {
  std::optional<std::string> platform;  // overrides the platform the build recorded
  int device_id = 0;
  // DFX. --swimlane alone is level 4 (PyPTO's bare --enable-chip-swimlane);
  // --dump-args alone is level 1 (partial), as in PyPTO.
  std::optional<int> swimlane;
  std::optional<int> swimlane_level;
  int pmu = 0;
  bool dep_gen = false;
  bool scope_stats = false;
  int dump_args = 0;
  // Ring overrides as typed: "65536" or "a,b,c,d" (parse_ring_override).
  std::optional<std::string> ring_task_window;
  std::optional<std::string> ring_heap;
  std::optional<std::string> ring_dep_pool;
  std::optional<int> aic_cores;  // else PYPTO_AIC_CORES, else sized to the machine
  std::optional<int> aiv_cores;  // else PYPTO_AIV_CORES
  std::optional<double> timeout_seconds;
  // L3 builds (docs/commands.md, "L3 builds"): how the rank agents come to be.
  std::string agents = "embedded";  // or "external"
  std::optional<std::string> bind;
  std::optional<std::string> mpirun_args;  // one string, split like a shell
  std::optional<std::string> hostfile;
  std::optional<double> startup_timeout_seconds;
  std::optional<double> prepare_timeout_seconds;
  std::optional<double> heartbeat_timeout_seconds;
  std::optional<double> wait_timeout_seconds;
};

// What the flags resolve to, checked; built before any directory is touched
// so that a bad flag is a usage error (exit 2) and never a FAIL/INFRA marker.
struct DispatchSettings {
  RunConfig config;  // platform left at the default; see config_for()
  CoreCounts cores;
  std::optional<std::chrono::milliseconds> timeout;
  // L3: agents (launch mode, mpirun, deadlines) and a kernel wait()'s deadline.
  DistributedWorkerOptions agents;
  std::optional<std::chrono::milliseconds> wait_timeout;

  // `config` running on `platform` (the build's effective platform).
  RunConfig config_for(const std::string& platform) const;
  DispatchContext context() const;
};

void add_dispatch_flags(CLI::App& cmd, DispatchFlags& flags);

// Throws UsageError naming the flag (or environment variable), the value and the rule.
DispatchSettings resolve_dispatch_flags(const DispatchFlags& flags);

// The flags again as command-line arguments (without --platform), for
// re-running a directory in a child process (exec --manifest).
std::vector<std::string> dispatch_flags_argv(const DispatchFlags& flags);

}  // namespace pypto::coord
