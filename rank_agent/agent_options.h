// Command line of pypto-rank (docs/commands.md, "pypto-rank"): where the
// coordinator is, how long to wait for it, and where this host keeps its
// blob store, binary cache and rank workspaces.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "pypto/run_config.h"

namespace pypto::rank {

namespace fs = std::filesystem;

struct AgentOptions {
  std::string coord;                                  // tcp://HOST:PORT of the coordinator's ROUTER
  std::chrono::milliseconds connect_timeout{60'000};  // how long to wait for WELCOME
  std::optional<fs::path> blob_store;                 // else BlobStore::default_root()
  std::optional<fs::path> binary_store;               // else <blob store root>/../bin
  // The directory that holds rank<r>/ (so one value serves every rank of an
  // mpirun); else <blob store root>/../workspaces/<run_id>.
  std::optional<fs::path> workspace;
  bool keep_workspace = false;
  std::chrono::milliseconds wait_timeout;  // kernel wait()/barrier deadline
  // From BLOBS until READY: a compile still running then is killed and named.
  std::optional<std::chrono::milliseconds> prepare_timeout;
  std::optional<std::string> log_level;    // else PYPTO_RUNTIME_LOG, else info
  bool version = false;                    // --version was given: print it and exit 0
};

// Parses argv. Throws UsageError (exit 2) for unknown flags and bad values;
// --help prints the help and sets `help_printed`.
AgentOptions parse_agent_options(int argc, const char* const* argv, bool* help_printed = nullptr);
AgentOptions parse_agent_options(const std::vector<std::string>& args);

// "pypto-rank 0.1.0 (source revision 81bd889a1b2c), control protocol 2".
std::string agent_version_text();

// Where one agent keeps its files, resolved from the options and the environment.
struct AgentPaths {
  fs::path blob_store;
  fs::path binary_store;
  fs::path workspace_parent;  // holds rank<r>/
};

// The run id is known only after WELCOME; it names the default workspace
// directory, so characters outside [A-Za-z0-9_.-] become '_'.
AgentPaths resolve_agent_paths(const AgentOptions& options, const std::string& run_id,
                               const EnvLookup& env = process_env());

// A run id made safe as one path component.
std::string run_id_component(const std::string& run_id);

}  // namespace pypto::rank
