// pypto-coord run <dir>: run a build directory once with its golden inputs
// (or --input files), write the outputs, optionally --validate them.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "coordinator/dispatch_flags.h"
#include "coordinator/l2_run.h"

namespace pypto::coord {

// The flags run and replay share.
struct RunArgs {
  std::string dir;
  std::vector<std::string> inputs;  // NAME=FILE.npy
  std::vector<std::string> scalars;   // NAME=VALUE
  std::vector<std::string> expected;  // NAME=FILE.npy
  std::optional<std::string> output_dir;
  bool validate = false;
  DispatchFlags dispatch;
};

void add_run_args(CLI::App& cmd, RunArgs& args);

// Checks the flags (UsageError, exit 2) before anything is loaded.
RunRequest make_run_request(const RunArgs& args);

// Returns the exit code; errors propagate as exceptions (cli.cc maps them).
int run_run(const RunArgs& args, std::ostream& out);

}  // namespace pypto::coord
