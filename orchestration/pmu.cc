#include "orchestration/pmu.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "pypto/error.h"

namespace pypto::chip {

namespace {

int open_counter(const PmuEvent& event) {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = event.type;
  attr.config = event.config;
  attr.disabled = 0;
  attr.exclude_kernel = 1;  // allowed at perf_event_paranoid 2 for software events
  attr.exclude_hv = 1;
  // pid 0, cpu -1: this thread, wherever it runs.
  return static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
}

uint64_t cache_config(uint64_t cache, uint64_t op, uint64_t result) {
  return cache | (op << 8) | (result << 16);
}

}  // namespace

std::vector<PmuEvent> pmu_event_set(int event_set) {
  std::vector<PmuEvent> events = {
      {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
      {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
      {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
      {"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
      {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
      {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
  };
  switch (event_set) {
    case 1:
      break;
    case 2:
      events.push_back({"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES});
      events.push_back({"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES});
      events.push_back(
          {"branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS});
      events.push_back({"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES});
      break;
    case 3:
      events.push_back({"L1-dcache-loads", PERF_TYPE_HW_CACHE,
                        cache_config(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_OP_READ,
                                     PERF_COUNT_HW_CACHE_RESULT_ACCESS)});
      events.push_back({"L1-dcache-load-misses", PERF_TYPE_HW_CACHE,
                        cache_config(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_OP_READ,
                                     PERF_COUNT_HW_CACHE_RESULT_MISS)});
      events.push_back({"LLC-loads", PERF_TYPE_HW_CACHE,
                        cache_config(PERF_COUNT_HW_CACHE_LL, PERF_COUNT_HW_CACHE_OP_READ,
                                     PERF_COUNT_HW_CACHE_RESULT_ACCESS)});
      events.push_back({"LLC-load-misses", PERF_TYPE_HW_CACHE,
                        cache_config(PERF_COUNT_HW_CACHE_LL, PERF_COUNT_HW_CACHE_OP_READ,
                                     PERF_COUNT_HW_CACHE_RESULT_MISS)});
      break;
    default:
      throw UsageError("--pmu " + std::to_string(event_set) +
                       " is not an event set; use 1 (basic), 2 (+cache and branch) or 3 "
                       "(+L1/LLC), or 0 for off");
  }
  return events;
}

PmuCounters::PmuCounters(const std::vector<PmuEvent>& events) {
  for (const auto& event : events) {
    int fd = open_counter(event);
    if (fd < 0) {
      unavailable_.push_back(event.name + ": " + std::strerror(errno));
      continue;
    }
    fds_.push_back(fd);
    available_.push_back(event.name);
  }
}

PmuCounters::~PmuCounters() {
  for (int fd : fds_) ::close(fd);
}

void PmuCounters::read(std::vector<uint64_t>& values) const {
  values.resize(fds_.size());
  for (size_t i = 0; i < fds_.size(); ++i) {
    uint64_t v = 0;
    if (::read(fds_[i], &v, sizeof(v)) != static_cast<ssize_t>(sizeof(v))) v = 0;
    values[i] = v;
  }
}

}  // namespace pypto::chip
