#include "coordinator/dispatch_flags.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "common/seconds_text.h"
#include "launch/command_words.h"
#include "orchestration/pmu.h"
#include "pypto/error.h"

namespace pypto::coord {

namespace {

// PyPTO maps a bare --enable-chip-swimlane to its full level.
constexpr int kBareSwimlaneLevel = 4;
// PyPTO's enable_dump_args: 1 partial (tagged tensors), 2 full; its bare
// --dump-args is 1.
constexpr int kBareDumpArgsLevel = 1;
constexpr int kMaxCores = 256;  // as PYPTO_AIC_CORES / PYPTO_AIV_CORES accept
constexpr double kMaxTimeoutSeconds = 7 * 24 * 3600.0;

std::string number_text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

void check_cores(const char* flag, const std::optional<int>& value) {
  if (value && (*value < 1 || *value > kMaxCores))
    throw UsageError(std::string(flag) + " " + std::to_string(*value) +
                     ": must be a core count from 1 to " + std::to_string(kMaxCores));
}

// As CoreCounts::from_env reads one variable (same rule and message).
int cores_from_env(const char* name, int fallback) {
  const char* value = std::getenv(name);
  if (!value || !*value) return fallback;
  char* end = nullptr;
  const long n = std::strtol(value, &end, 10);
  if (*end != '\0' || n < 1 || n > kMaxCores)
    throw UsageError(std::string(name) + "='" + value +
                     "' is not a core count; use an integer from 1 to " +
                     std::to_string(kMaxCores));
  return static_cast<int>(n);
}

// A positive number of seconds up to a week, as milliseconds; UsageError naming `flag`.
constexpr std::chrono::milliseconds kMinHeartbeatTimeout{1000};

std::chrono::milliseconds seconds_flag(const char* flag, double t) {
  if (!std::isfinite(t) || t <= 0 || t > kMaxTimeoutSeconds)
    throw UsageError(std::string(flag) + " " + number_text(t) +
                     ": must be a number of seconds > 0 and at most one week");
  return std::chrono::milliseconds(std::max<int64_t>(1, std::llround(t * 1000)));
}

}  // namespace

void add_dispatch_flags(CLI::App& cmd, DispatchFlags& f) {
  cmd.add_option("--platform", f.platform,
                 "run on this platform instead of the recorded one (a2a3sim, a5sim; the onboard "
                 "a2a3 and a5 need a device and fail here with exit 3)");
  cmd.add_option("--device-id", f.device_id, "device id of the run, reported by exec (default 0)")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--swimlane", f.swimlane,
                 "write the run's dfx_outputs/timeline.json (open it in Perfetto or "
                 "chrome://tracing) from each dispatch's chip_swimlane_trace.json and "
                 "chip_swimlane_records.json (in dfx_outputs/, at L3 in dfx_outputs/rank<r>/d<k>/); "
                 "alone: level 4 (full), or a level 1..4")
      ->expected(0, 1)
      ->default_str(std::to_string(kBareSwimlaneLevel))
      ->check(CLI::Range(0, 4));
  cmd.add_option("--swimlane-level", f.swimlane_level,
                 "swimlane collection level: 1 per-task start/end, 2 + scheduler "
                 "dispatch/finish, 3 + scheduler phases, 4 + orchestrator submits; 0 off")
      ->check(CLI::Range(0, 4));
  cmd.add_option("--pmu", f.pmu, "write dfx_outputs/pmu.csv with PMU event set N (1..3); 0 off")
      ->check(CLI::NonNegativeNumber);
  cmd.add_flag("--dep-gen", f.dep_gen, "write dfx_outputs/deps.json (the task dependency graph)");
  cmd.add_flag("--scope-stats", f.scope_stats,
               "write dfx_outputs/scope_stats/scope_stats.jsonl (per-scope ring peaks)");
  cmd.add_option("--dump-args", f.dump_args,
                 "write dfx_outputs/args_dump/: alone or 1 only the tensors kernels tag, 2 "
                 "every tensor argument; 0 off")
      ->expected(0, 1)
      ->default_str(std::to_string(kBareDumpArgsLevel))
      ->check(CLI::Range(0, 2));
  cmd.add_option("--ring-task-window", f.ring_task_window,
                 "task slots per ring: N for all 4 ring levels or a,b,c,d (0 = default); "
                 "powers of 2 >= 4 (else PTO2_RING_TASK_WINDOW)");
  cmd.add_option("--ring-heap", f.ring_heap,
                 "bytes per ring: N or a,b,c,d; powers of 2 >= 1024 (else PTO2_RING_HEAP)");
  cmd.add_option("--ring-dep-pool", f.ring_dep_pool,
                 "dependency entries per ring: N or a,b,c,d; >= 4 (else PTO2_RING_DEP_POOL)");
  cmd.add_option("--aic-cores", f.aic_cores,
                 "simulated cube cores (else $PYPTO_AIC_CORES, else sized to the machine)");
  cmd.add_option("--aiv-cores", f.aiv_cores,
                 "simulated vector cores (else $PYPTO_AIV_CORES, else sized to the machine)");
  cmd.add_option("--timeout", f.timeout_seconds,
                 "dispatch deadline in seconds (default 600); a dispatch still running then "
                 "fails (exit 1)");
  cmd.add_option("--agents", f.agents,
                 "L3: 'embedded' (default) launches mpirun -n <world> pypto-rank itself; "
                 "'external' waits at --bind for agents launched elsewhere")
      ->check(CLI::IsMember({"embedded", "external"}));
  cmd.add_option("--bind", f.bind,
                 "L3: the address agents connect to, tcp://ADDR:PORT (required with --agents "
                 "external; default an ephemeral loopback port)");
  cmd.add_option("--mpirun-args", f.mpirun_args,
                 "L3: extra mpirun arguments, one string split like a shell (\"--mca btl "
                 "self,vader\")");
  cmd.add_option("--hostfile", f.hostfile, "L3: passed to mpirun --hostfile");
  cmd.add_option("--startup-timeout", f.startup_timeout_seconds,
                 "L3: seconds until every agent has connected (default 120)");
  cmd.add_option("--prepare-timeout", f.prepare_timeout_seconds,
                 "L3: seconds until every agent has materialized its sub-build, compiled its "
                 "kernels and created its windows (default 300); the error names the rank and "
                 "what it was compiling");
  cmd.add_option("--heartbeat-timeout", f.heartbeat_timeout_seconds,
                 "L3: seconds of silence after which an agent (or the coordinator, for the "
                 "agents) counts as gone (default 10)");
  cmd.add_option("--wait-timeout", f.wait_timeout_seconds,
                 "L3: deadline in seconds of a kernel's wait() on a signal cell (default 60); "
                 "its expiry fails the dispatch naming rank, window, cell and values");
}

RunConfig DispatchSettings::config_for(const std::string& platform) const {
  RunConfig result = config;
  result.set_platform(platform);
  return result;
}

DispatchContext DispatchSettings::context() const {
  DispatchContext ctx;
  ctx.dispatch_timeout = timeout;
  return ctx;
}

DispatchSettings resolve_dispatch_flags(const DispatchFlags& f) {
  DispatchSettings s;
  RunConfig& c = s.config;
  // An unknown platform is a usage error listing the valid ones.
  if (f.platform) parse_platform(*f.platform);
  c.device_id = f.device_id;

  if (f.swimlane && f.swimlane_level && *f.swimlane != *f.swimlane_level)
    throw UsageError("--swimlane " + std::to_string(*f.swimlane) + " and --swimlane-level " +
                     std::to_string(*f.swimlane_level) + " disagree; pass one of them");
  c.enable_chip_swimlane = f.swimlane_level.value_or(f.swimlane.value_or(0));
  c.enable_dump_args = f.dump_args;
  c.enable_pmu = f.pmu;
  if (f.pmu > 0) chip::pmu_event_set(f.pmu);  // throws UsageError naming the valid sets
  c.enable_dep_gen = f.dep_gen;
  c.enable_scope_stats = f.scope_stats;

  if (f.ring_task_window)
    c.ring_task_window =
        parse_ring_override(RingKind::kTaskWindow, *f.ring_task_window, "--ring-task-window");
  if (f.ring_heap) c.ring_heap = parse_ring_override(RingKind::kHeap, *f.ring_heap, "--ring-heap");
  if (f.ring_dep_pool)
    c.ring_dep_pool = parse_ring_override(RingKind::kDepPool, *f.ring_dep_pool, "--ring-dep-pool");
  c.validate();
  // Resolving now checks the PTO2_RING_* variables the flags leave in force.
  (void)c.resolved_ring_sizes();

  check_cores("--aic-cores", f.aic_cores);
  check_cores("--aiv-cores", f.aiv_cores);
  // Each variable is read only when its flag is absent, so a flag also
  // overrides a malformed variable.
  s.cores.aic = f.aic_cores ? *f.aic_cores : cores_from_env("PYPTO_AIC_CORES", s.cores.aic);
  s.cores.aiv = f.aiv_cores ? *f.aiv_cores : cores_from_env("PYPTO_AIV_CORES", s.cores.aiv);

  if (f.timeout_seconds) s.timeout = seconds_flag("--timeout", *f.timeout_seconds);
  if (f.wait_timeout_seconds) s.wait_timeout = seconds_flag("--wait-timeout", *f.wait_timeout_seconds);

  DistributedWorkerOptions& agents = s.agents;
  agents.agents = f.agents == "external" ? AgentMode::kExternal : AgentMode::kEmbedded;
  agents.progress = true;  // on a terminal only
  if (agents.agents == AgentMode::kExternal && !f.bind)
    throw UsageError("--agents external needs --bind tcp://ADDR:PORT, the address the agents "
                     "connect to (mpirun -n <world> pypto-rank --coord tcp://HOST:PORT)");
  if (f.bind) {
    if (f.bind->rfind("tcp://", 0) != 0)
      throw UsageError("--bind " + *f.bind + ": expected tcp://ADDR:PORT (tcp://*:5555)");
    // ZeroMQ would take 99999 as an ephemeral port and -1 as 65535.
    const size_t colon = f.bind->rfind(':');
    const std::string port = colon > 5 ? f.bind->substr(colon + 1) : "";
    const bool digits = !port.empty() && port.size() <= 5 &&
                        std::all_of(port.begin(), port.end(), [](unsigned char c) {
                          return std::isdigit(c);
                        });
    if (port != "*" && !(digits && std::stoi(port) >= 1 && std::stoi(port) <= 65535))
      throw UsageError("--bind " + *f.bind + ": the port '" + port +
                       "' is not a TCP port; give 1-65535, or * for an ephemeral one "
                       "(tcp://127.0.0.1:5555, tcp://*:*)");
    agents.bind = *f.bind;
  }
  if (agents.agents == AgentMode::kExternal && (f.mpirun_args || f.hostfile))
    throw UsageError("--mpirun-args and --hostfile shape the mpirun that --agents embedded "
                     "starts; with --agents external pass them to your own mpirun");
  if (f.mpirun_args) agents.mpirun.mpirun_args = launch::split_command_words(*f.mpirun_args);
  if (f.hostfile) agents.mpirun.hostfile = fs::path(*f.hostfile);
  if (f.startup_timeout_seconds)
    agents.startup_timeout = seconds_flag("--startup-timeout", *f.startup_timeout_seconds);
  if (f.prepare_timeout_seconds)
    agents.prepare_timeout = seconds_flag("--prepare-timeout", *f.prepare_timeout_seconds);
  if (f.heartbeat_timeout_seconds) {
    agents.heartbeat_timeout = seconds_flag("--heartbeat-timeout", *f.heartbeat_timeout_seconds);
    // Below this the agents' own checks (a heartbeat every timeout/4, at least 50 ms apart)
    // cannot tell a busy coordinator from a dead one.
    if (agents.heartbeat_timeout < kMinHeartbeatTimeout)
      throw UsageError("--heartbeat-timeout " + number_text(*f.heartbeat_timeout_seconds) +
                       ": must be at least " +
                       std::to_string(kMinHeartbeatTimeout.count() / 1000) +
                       " s; shorter, a busy agent or coordinator counts as gone");
    agents.heartbeat_interval =
        std::min(agents.heartbeat_interval, std::max(std::chrono::milliseconds(50),
                                                     agents.heartbeat_timeout / 4));
  }
  // The agents size their simulated cores from these variables, which mpirun hands
  // them (they inherit its environment on this host; -x for the others).
  if (f.aic_cores) agents.mpirun.env.push_back("PYPTO_AIC_CORES=" + std::to_string(s.cores.aic));
  if (f.aiv_cores) agents.mpirun.env.push_back("PYPTO_AIV_CORES=" + std::to_string(s.cores.aiv));
  return s;
}

std::vector<std::string> dispatch_flags_argv(const DispatchFlags& f) {
  std::vector<std::string> argv;
  auto add = [&](const std::string& flag, const std::string& value) {
    argv.push_back(flag);
    argv.push_back(value);
  };
  if (f.device_id != 0) add("--device-id", std::to_string(f.device_id));
  const int swimlane = f.swimlane_level.value_or(f.swimlane.value_or(0));
  if (swimlane) add("--swimlane-level", std::to_string(swimlane));
  if (f.pmu) add("--pmu", std::to_string(f.pmu));
  if (f.dep_gen) argv.push_back("--dep-gen");
  if (f.scope_stats) argv.push_back("--scope-stats");
  if (f.dump_args) add("--dump-args", std::to_string(f.dump_args));
  if (f.ring_task_window) add("--ring-task-window", *f.ring_task_window);
  if (f.ring_heap) add("--ring-heap", *f.ring_heap);
  if (f.ring_dep_pool) add("--ring-dep-pool", *f.ring_dep_pool);
  if (f.aic_cores) add("--aic-cores", std::to_string(*f.aic_cores));
  if (f.aiv_cores) add("--aiv-cores", std::to_string(*f.aiv_cores));
  if (f.timeout_seconds) add("--timeout", seconds_text(*f.timeout_seconds));
  if (f.agents != "embedded") add("--agents", f.agents);
  if (f.bind) add("--bind", *f.bind);
  if (f.mpirun_args) add("--mpirun-args", *f.mpirun_args);
  if (f.hostfile) add("--hostfile", *f.hostfile);
  if (f.startup_timeout_seconds)
    add("--startup-timeout", seconds_text(*f.startup_timeout_seconds));
  if (f.prepare_timeout_seconds)
    add("--prepare-timeout", seconds_text(*f.prepare_timeout_seconds));
  if (f.heartbeat_timeout_seconds)
    add("--heartbeat-timeout", seconds_text(*f.heartbeat_timeout_seconds));
  if (f.wait_timeout_seconds) add("--wait-timeout", seconds_text(*f.wait_timeout_seconds));
  return argv;
}

}  // namespace pypto::coord
