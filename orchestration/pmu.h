// Per-task hardware and software counters from Linux perf events
// (perf_event_open), for --pmu N. Event sets (docs/dfx.md):
//   1: task-clock, page-faults, context-switches, cpu-migrations, cycles, instructions
//   2: set 1 + cache-references, cache-misses, branch-instructions, branch-misses
//   3: set 1 + L1-dcache-loads, L1-dcache-load-misses, LLC-loads, LLC-load-misses
// Events the kernel refuses (ENOENT on VMs without hardware counters, EACCES
// under perf_event_paranoid) are left out and reported, and the run goes on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pypto::chip {

struct PmuEvent {
  std::string name;
  uint32_t type;
  uint64_t config;
};

// The events of set `event_set` (1..3); throws UsageError for another number.
std::vector<PmuEvent> pmu_event_set(int event_set);

// Counters of the calling thread. Open on the thread that runs the tasks.
class PmuCounters {
 public:
  explicit PmuCounters(const std::vector<PmuEvent>& events);
  ~PmuCounters();
  PmuCounters(const PmuCounters&) = delete;
  PmuCounters& operator=(const PmuCounters&) = delete;

  // Names of the events that opened, in order; values() fills one per name.
  const std::vector<std::string>& available() const { return available_; }
  // "cycles: No such file or directory", one per event that did not open.
  const std::vector<std::string>& unavailable() const { return unavailable_; }
  void read(std::vector<uint64_t>& values) const;

 private:
  std::vector<int> fds_;
  std::vector<std::string> available_;
  std::vector<std::string> unavailable_;
};

}  // namespace pypto::chip
