// pypto-coord bench <dir>: timed dispatches of a build directory (DESIGN's
// command table). The build is prepared once — kernels assembled, and for an
// L3 build the agents launched, shipped and readied — then run `--warmup`
// untimed and `--rounds` timed times with its golden (or --input) data, the
// way a DistributedWorker or ChipWorker serves repeated calls. Prints the
// statistics of the round times; --json prints them as JSON. --resident (L3)
// binds every parameter it can to a resident tensor (docs/resident-tensors.md):
// uploaded once before the rounds, downloaded once after them. An L3 bench
// also breaks the rounds down per rank and per dispatch (which rank was the
// slowest of each round). DFX switches are off during the timed rounds unless
// --dfx-in-rounds; given any, one extra round runs with them after the timed
// ones, its records laid out in dfx_outputs/ (and timeline.json with --swimlane).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "coordinator/dispatch_flags.h"

namespace pypto::coord {

struct BenchArgs {
  std::string dir;
  std::vector<std::string> inputs;  // NAME=FILE.npy
  int rounds = 100;
  int warmup = 3;
  bool json = false;
  bool keep_windows = false;
  bool resident = false;  // L3: inputs uploaded once, rounds on resident data
  bool dfx_in_rounds = false;  // DFX switches on in the timed rounds too
  DispatchFlags dispatch;
};

void add_bench_args(CLI::App& cmd, BenchArgs& args);

// Round-time statistics, in milliseconds; stdev is the sample standard deviation
// (0 for one round).
struct RoundStats {
  int rounds = 0;
  double min = 0, median = 0, mean = 0, stdev = 0, p90 = 0, max = 0;
};
// Throws UsageError when `ms` is empty.
RoundStats round_stats(std::vector<double> ms);

// One timed L3 round: its wall time and each dispatch's time on its rank (the
// agent's start to end).
struct RoundDispatch {
  int rank = 0;
  uint64_t index = 0;
  std::string program;
  double ms = 0;
};
struct RoundRecord {
  double ms = 0;
  std::vector<RoundDispatch> dispatches;
};

struct RankBreakdown {
  int rank = 0;
  RoundStats ms;           // the rank's dispatches summed, per round
  int slowest_rounds = 0;  // rounds in which this rank took longest
};
struct DispatchBreakdown {
  int rank = 0;
  uint64_t index = 0;
  std::string program;
  RoundStats ms;
};
struct BenchBreakdown {
  std::vector<RankBreakdown> ranks;
  std::vector<DispatchBreakdown> dispatches;  // by rank, then index
  // Per round, the slowest rank's time over the round's wall time; the median
  // over the rounds. Near 1: the round is that rank's dispatches; lower: the
  // coordinator's own work (shipping arguments, gathering outputs) counts.
  double slowest_share_median = 0;
};
// Throws UsageError when `rounds` is empty.
BenchBreakdown bench_breakdown(const std::vector<RoundRecord>& rounds);

int run_bench(const BenchArgs& args, std::ostream& out);

}  // namespace pypto::coord
