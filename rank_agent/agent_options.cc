#include "rank_agent/agent_options.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <iostream>
#include <sstream>

#include "common/version.h"
#include "common/wire/blob_store.h"
#include "common/wire/protocol.h"
#include "pypto/error.h"
#include "rank_agent/comm_api.h"

namespace pypto::rank {

namespace {

constexpr double kMaxSeconds = 7 * 24 * 3600.0;

std::chrono::milliseconds seconds_option(const char* flag, double value) {
  if (!std::isfinite(value) || value <= 0 || value > kMaxSeconds) {
    std::ostringstream text;
    text << flag << " " << value << ": must be a number of seconds > 0 and at most one week";
    throw UsageError(text.str());
  }
  return std::chrono::milliseconds(std::max<int64_t>(1, std::llround(value * 1000)));
}

}  // namespace

std::string agent_version_text() {
  return version_text("pypto-rank") + ", control protocol " +
         std::to_string(wire::kProtocolVersion);
}

AgentOptions parse_agent_options(int argc, const char* const* argv, bool* help_printed) {
  if (help_printed) *help_printed = false;
  CLI::App app{
      "pypto-rank: one rank agent of a distributed PyPTO run; start one per MPI rank with "
      "mpirun -n <world> pypto-rank --coord tcp://HOST:PORT"};
  AgentOptions o;
  double connect_seconds = 60;
  std::optional<double> wait_seconds;
  std::optional<double> prepare_seconds;
  std::string blob_store, binary_store, workspace;
  // Required, but checked after parsing so that an unknown flag is named first.
  app.add_option("--coord", o.coord,
                 "the coordinator's control endpoint, tcp://HOST:PORT (required)");
  app.add_option("--connect-timeout", connect_seconds,
                 "seconds to wait for the coordinator's WELCOME (default 60)");
  app.add_option("--blob-store", blob_store,
                 "this host's blob store (default $PYPTO_BLOB_STORE, else "
                 "$XDG_CACHE_HOME/pypto/blobs, else ~/.cache/pypto/blobs)");
  app.add_option("--binary-store", binary_store,
                 "host-wide compiled-kernel cache shared by every rank of the host (default: "
                 "bin/ beside the blob store)");
  app.add_option("--workspace", workspace,
                 "directory holding this rank's workspace rank<r>/ (default: "
                 "workspaces/<run id>/ beside the blob store)");
  app.add_flag("--keep-workspace", o.keep_workspace,
               "keep the rank workspace after a clean exit (default: removed)");
  app.add_option("--wait-timeout", wait_seconds,
                 "deadline in seconds of a kernel's wait/barrier (default 60; a dispatch's own "
                 "value wins)");
  app.add_option("--prepare-timeout", prepare_seconds,
                 "seconds from receiving a build's files until READY; a kernel compile still "
                 "running then is killed and reported naming its source (default: none, the "
                 "coordinator's own deadline applies)");
  app.add_option("--log-level", o.log_level,
                 "debug, info, timing, warn, error or null (default: $PYPTO_RUNTIME_LOG, else "
                 "info)");
  app.add_flag("--version", o.version, "print the version, the source revision and the control protocol, then exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    app.exit(e);
    if (help_printed) *help_printed = true;
    return o;
  } catch (const CLI::ParseError& e) {
    throw UsageError(e.what());
  }
  if (o.version) return o;
  if (o.coord.empty())
    throw UsageError("--coord tcp://HOST:PORT is required: the address pypto-coord prints");
  if (o.coord.rfind("tcp://", 0) != 0 && o.coord.rfind("ipc://", 0) != 0)
    throw UsageError("--coord '" + o.coord +
                     "' is not a control endpoint; pass tcp://HOST:PORT as printed by pypto-coord");
  o.connect_timeout = seconds_option("--connect-timeout", connect_seconds);
  o.wait_timeout = wait_seconds ? seconds_option("--wait-timeout", *wait_seconds)
                                : std::chrono::milliseconds(kDefaultWaitTimeout);
  if (prepare_seconds) o.prepare_timeout = seconds_option("--prepare-timeout", *prepare_seconds);
  if (!blob_store.empty()) o.blob_store = blob_store;
  if (!binary_store.empty()) o.binary_store = binary_store;
  if (!workspace.empty()) o.workspace = workspace;
  return o;
}

AgentOptions parse_agent_options(const std::vector<std::string>& args) {
  std::vector<const char*> argv{"pypto-rank"};
  for (const auto& a : args) argv.push_back(a.c_str());
  return parse_agent_options(static_cast<int>(argv.size()), argv.data());
}

std::string run_id_component(const std::string& run_id) {
  std::string out;
  for (char c : run_id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    out.push_back(ok ? c : '_');
  }
  if (out.empty() || out == "." || out == "..") out = "run";
  return out;
}

AgentPaths resolve_agent_paths(const AgentOptions& options, const std::string& run_id,
                               const EnvLookup& env) {
  AgentPaths paths;
  paths.blob_store = fs::absolute(wire::BlobStore::default_root(options.blob_store, env));
  paths.binary_store = wire::host_binary_store(options.binary_store, paths.blob_store, env);
  paths.workspace_parent = options.workspace ? fs::absolute(*options.workspace)
                                             : wire::BlobStore::cache_root(paths.blob_store) /
                                                   "workspaces" / run_id_component(run_id);
  return paths;
}

}  // namespace pypto::rank
