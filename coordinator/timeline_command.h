// pypto-coord timeline <dir>: rebuilds dfx_outputs/timeline.json (timeline.h)
// from the DFX records a run with --swimlane left, for a build directory or
// its dfx_outputs/.
#pragma once

#include <CLI/CLI.hpp>

#include <ostream>
#include <string>

namespace pypto::coord {

struct TimelineArgs {
  std::string dir;
};

void add_timeline_args(CLI::App& cmd, TimelineArgs& args);

int run_timeline(const TimelineArgs& args, std::ostream& out);

}  // namespace pypto::coord
