// The critical path of a run (docs/dfx.md "The run report"): the chain of
// tasks, waits and gaps that bounded its wall time, found by walking back from
// the end of the dispatch that finished last — through the task running at
// each moment and, where that task was blocked in a wait, across to the rank
// whose notify released it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "coordinator/timeline.h"

namespace pypto::coord {

struct CriticalStep {
  enum class Kind { kTask, kWaitRelease, kIdle, kBetweenDispatches };
  Kind kind = Kind::kTask;
  int rank = 0;
  int64_t dispatch = 0;
  // "matmul (task 3)", "wait 'signal'[1] ge 1 released by rank 0's notify", ...
  std::string what;
  int64_t start_ns = 0;  // coordinator clock
  int64_t end_ns = 0;
  int64_t ns() const { return end_ns - start_ns; }
};

// In time order; empty when the run has no swimlane records. `releases` is
// run.comm_releases().
std::vector<CriticalStep> critical_path(const RunTimeline& run,
                                        const std::map<CommOpRef, CommOpRef>& releases);

}  // namespace pypto::coord
