// pypto-coord replay <dir>: re-run a build after hand edits of kernel .cpp or
// .pto files without recompiling from the program (docs/cache-and-replay.md): splice
// ptoas/*.pto bodies into the kernels, invalidate the binary cache, then run
// exactly as `run`.
#pragma once

#include <CLI/CLI.hpp>

#include <ostream>

#include "coordinator/run_command.h"

namespace pypto::coord {

struct ReplayArgs {
  RunArgs run;
  bool no_rebuild_from_pto = false;
  bool no_recompile = false;
};

void add_replay_args(CLI::App& cmd, ReplayArgs& args);

// Prints what was spliced/skipped and invalidated, then the run summary.
int run_replay(const ReplayArgs& args, std::ostream& out);

}  // namespace pypto::coord
