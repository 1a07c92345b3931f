// pypto-coord bench <dir>: timed dispatches of a build directory (DESIGN's
// command table). The build is prepared once — kernels assembled, and for an
// L3 build the agents launched, shipped and readied — then run `--warmup`
// untimed and `--rounds` timed times with its golden (or --input) data, the
// way a DistributedWorker or ChipWorker serves repeated calls. Prints the
// statistics of the round times; --json prints them as JSON. --resident (L3)
// binds every parameter it can to a resident tensor (docs/resident-tensors.md):
// uploaded once before the rounds, downloaded once after them.
#pragma once

#include <CLI/CLI.hpp>

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
  DispatchFlags dispatch;
};

void add_bench_args(CLI::App& cmd, BenchArgs& args);

// Round-time statistics, in milliseconds.
struct RoundStats {
  int rounds = 0;
  double min = 0, median = 0, mean = 0, p90 = 0, max = 0;
};
// Throws UsageError when `ms` is empty.
RoundStats round_stats(std::vector<double> ms);

int run_bench(const BenchArgs& args, std::ostream& out);

}  // namespace pypto::coord
