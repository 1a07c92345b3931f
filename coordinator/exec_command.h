// pypto-coord exec: the CI entry (PyPTO's execute_artifact). Runs a build
// directory, validates it against golden/ and prints one machine-readable
// marker line per directory on stdout; everything else goes to stderr.
//
//   exec <dir>              PYPTO_EXEC_RESULT=PASS device=<N> | FAIL | INFRA
//   exec --manifest m.json  PYPTO_EXEC_RESULT=PASS work_dir=<wd> device=<N>
//                           PYPTO_EXEC_RESULT=FAIL work_dir=<wd>
//                           PYPTO_EXEC_RESULT=INFRA work_dir=<wd>
//
// FAIL: the program is wrong (kernel compile error, kernel runtime error,
// validation mismatch). INFRA: the directory or environment could not be set
// up (invalid sidecar, no golden/, no compiler, onboard platform, unreadable
// inputs). Exit code: 0 when every directory passed, 1 when any failed,
// otherwise 3. Each manifest entry runs in a child `pypto-coord exec`, so a
// kernel that kills its process cannot take the rest of the batch with it.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "coordinator/dispatch_flags.h"

namespace pypto::coord {

struct ExecArgs {
  std::optional<std::string> dir;
  std::optional<std::string> manifest;
  DispatchFlags dispatch;
  // The command that runs one manifest entry, before "<dir> [flags]": empty
  // means this executable's `exec` (/proc/self/exe). An embedder whose process
  // is not pypto-coord (the Python package) names its own entry here.
  std::vector<std::string> child_command;
};

void add_exec_args(CLI::App& cmd, ExecArgs& args);

enum class ExecStatus { kPass, kFail, kInfra };
const char* exec_status_name(ExecStatus status);  // "PASS", "FAIL", "INFRA"

// `log_level` is the --log-level given, handed on to the children of a batch.
int run_exec(const ExecArgs& args, const std::optional<std::string>& log_level, std::ostream& out,
             std::ostream& err);

}  // namespace pypto::coord
