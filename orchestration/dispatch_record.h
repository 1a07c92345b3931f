// What one dispatch of the chip runtime observed, for the DFX writers
// (dfx_writers.h). Filled only for the switches that are on; with every
// switch off the runtime records nothing but the outcome.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "orchestration/tensor_map.h"

namespace pypto::chip {

// All timestamps: nanoseconds of CLOCK_MONOTONIC, one clock for every process
// on a host (docs/dfx.md).
int64_t now_ns();

struct ArgDump {
  int32_t arg_index = 0;
  std::string tag;  // set by the kernel through hooks->tag_tensor; empty at level 2
  int32_t direction = 0;
  int32_t dtype = 0;
  std::vector<int64_t> shape;
  std::string bytes;  // C-contiguous copy of the view after the task ran
};

struct TaskRecord {
  int64_t task_id = 0;
  int32_t func_id = 0;
  int32_t core_type = 0;
  int32_t core_id = -1;  // -1: never ran (the dispatch failed before it)
  int32_t scope_id = 0;
  int64_t submit_begin_ns = 0;  // orchestrator entered submit (level 4)
  int64_t submit_end_ns = 0;    // submit returned (level 4)
  int64_t ready_ns = 0;         // last dependency satisfied, queued (level 2)
  int64_t dispatch_ns = 0;      // a core took it from the ready queue (level 2)
  int64_t start_ns = 0;         // kernel entered (level 1)
  int64_t end_ns = 0;           // kernel returned (level 1)
  int64_t finish_ns = 0;        // successors released (level 2)
  std::vector<uint64_t> pmu;    // one value per PmuEventSet event
  std::vector<ArgDump> args;
};

// Scheduler phases of one core (swimlane level 3): waiting for work, running
// kernels, releasing successors.
struct CorePhase {
  int32_t core_id = 0;
  int32_t core_type = 0;
  std::string phase;  // "idle", "execute", "complete"
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

struct ScopeRecord {
  int32_t scope_id = 0;
  int32_t parent_id = -1;
  int32_t depth = 0;
  std::string name;
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
  int64_t num_tasks = 0;           // submitted directly in this scope
  int32_t ring = 0;                // the ring level its tasks use
  uint64_t peak_tasks_in_flight = 0;  // of that ring, seen at this scope's submits
  uint64_t peak_heap_bytes = 0;
  uint64_t peak_dep_edges = 0;
};

struct EdgeRecord {
  int64_t pred = 0;
  int64_t succ = 0;
  int32_t tensor_id = 0;
  DepReason reason = DepReason::kReadAfterWrite;
};

struct TensorRecord {
  int32_t tensor_id = 0;
  std::string name;  // the orchestration parameter it belongs to, when known
  uintptr_t base = 0;
};

struct DispatchRecord {
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
  int64_t num_tasks = 0;
  std::vector<TaskRecord> tasks;  // ordered by task id
  std::vector<CorePhase> phases;
  std::vector<ScopeRecord> scopes;
  std::vector<EdgeRecord> edges;
  std::vector<TensorRecord> tensors;
  std::vector<std::string> pmu_events;       // names of the counters in TaskRecord::pmu
  std::vector<std::string> pmu_unavailable;  // requested events the kernel refused, with why
};

}  // namespace pypto::chip
