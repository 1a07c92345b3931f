// The chip runtime: runs one chip orchestration's task graph on simulated
// AIC (cube) and AIV (vector) core threads.
//
// The orchestration entry runs on the calling thread (the AICPU orchestrator
// of a real chip) and submits tasks; each task's dependencies are inferred
// from its tensor arguments (tensor_map.h); a task whose predecessors are done
// goes to the ready queue of its core type, where a core thread runs it.
// Tasks live in ring slots, one ring per scope level (ring_task_window,
// ring_heap, ring_dep_pool): the orchestrator waits for the oldest task of a
// full ring, and a single task larger than a ring is an error.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "orchestration/dispatch_record.h"
#include "orchestration/pmu.h"
#include "orchestration/task_board.h"
#include "orchestration/tensor_map.h"
#include "pypto/kernel_abi.h"

namespace pypto::chip {

struct KernelBinding {
  int32_t func_id = 0;
  std::string name;
  int32_t core_type = PYPTO_CORE_AIV;
  pypto_kernel_entry_fn entry = nullptr;
  // From the kernel's signature; a submit with other counts is an error.
  int32_t num_tensors = 0;
  int32_t num_scalars = 0;
};

struct RingLimits {
  uint64_t task_window = 4096;  // tasks in flight
  uint64_t heap = 4u << 20;     // bytes of task arguments in flight
  uint64_t dep_pool = 16384;    // dependency edges in flight
};

struct RuntimeConfig {
  int aic_cores = 1;
  int aiv_cores = 1;
  std::array<RingLimits, 4> rings{};  // one per scope level
  // DFX switches (docs/dfx.md); all off costs nothing.
  int swimlane_level = 0;
  int pmu_event_set = 0;
  bool dep_gen = false;
  bool scope_stats = false;
  int dump_args = 0;
  int rank = 0;
  int world = 1;
  std::chrono::milliseconds dispatch_timeout{std::chrono::minutes(10)};
  // Yields an idle core thread makes before it sleeps: cheap wake-ups for bursts of
  // tasks on a machine with cores to spare; 0 when the host is oversubscribed
  // (eight rank agents on two cores), where spinning only steals the others' time.
  int idle_spins = 64;
  // A dispatch of one task runs it on the orchestrating thread instead of waking a
  // core thread (one thread hand-off less). Only for a caller that enforces the
  // dispatch deadline itself: a kernel that never returns then holds up run().
  bool run_lone_task_inline = false;
};

// Core counts sized to the machine: half the cores each, at least 1, at most
// 8 (not a real chip's 24 AIV cores on a 2-core host).
int default_core_count();

struct OrchestrationCall {
  std::string program;  // for messages
  pypto_orch_entry_fn entry = nullptr;
  std::vector<pypto_tensor> tensors;
  std::vector<std::string> tensor_names;  // parameter names, for deps.json
  std::vector<int64_t> scalars;
  std::vector<pypto_window> windows;
  // Window communication for kernels (L3 rank agents); nullptr on L2, where
  // every comm call fails with a message saying windows need an L3 run.
  const pypto_comm_api* comm = nullptr;
  void* comm_state = nullptr;
  // Where the cores post the task each runs, for a reader on another thread
  // (a rank agent's state after a stall); nullptr: nowhere.
  TaskBoard* board = nullptr;
};

// The comm table of single-chip runs: every call reports an error and fails.
const pypto_comm_api* no_comm_api();

class ChipRuntime {
 public:
  explicit ChipRuntime(const RuntimeConfig& config);
  ~ChipRuntime();
  ChipRuntime(const ChipRuntime&) = delete;
  ChipRuntime& operator=(const ChipRuntime&) = delete;

  // Runs one dispatch to completion. Throws KernelRuntimeError naming the
  // program, kernel and task when a kernel or the orchestration fails, and
  // after the dispatch deadline. The runtime stays usable after a failure
  // unless a kernel is still running past the deadline.
  DispatchRecord run(const OrchestrationCall& call, const std::vector<KernelBinding>& kernels);

  const RuntimeConfig& config() const { return config_; }

  // Entry points of pypto_orch_api and pypto_kernel_hooks (public for the C shims).
  int64_t submit(int32_t func_id, int32_t core_type, const pypto_task_arg* args, int32_t num_args,
                 const int64_t* scalars, int32_t num_scalars);
  void scope_begin(const char* name);
  void scope_end();
  void report_orchestration_error(const char* message);

 private:
  struct Slot;
  struct Core;
  struct ReadyQueue {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<int32_t> slots;
    int sleepers = 0;
  };
  struct Ring {
    int32_t base = 0;
    int32_t size = 0;
    int64_t next_seq = 0;
    uint64_t heap_in_use = 0;
    uint64_t deps_in_use = 0;
    uint64_t in_flight = 0;
    RingLimits limits;
  };

  void core_loop(Core* core);
  void run_task(Core* core, Slot& slot);
  void complete_task(Core* core, int32_t slot_index);
  void push_ready(int32_t slot_index);
  // Runs the held lone task on the calling (orchestrating) thread.
  void run_held_task();
  void retire(Slot& slot);
  void fail(const std::string& message);
  bool recording() const;
  [[noreturn]] void throw_submit_error(const std::string& message);
  std::chrono::steady_clock::time_point deadline() const { return deadline_; }

  RuntimeConfig config_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::array<Ring, 4> rings_{};
  std::array<ReadyQueue, 2> ready_;  // indexed by pypto_core_type
  std::vector<std::unique_ptr<Core>> cores_;
  std::vector<std::thread> threads_;
  bool stop_ = false;  // guarded by both ready queue mutexes

  // Ring accounting and completion, shared by the orchestrator and the cores.
  std::mutex ring_mu_;
  std::condition_variable ring_cv_;
  int64_t completed_ = 0;
  int64_t submitted_ = 0;
  int ring_waiters_ = 0;  // threads waiting on ring_cv_; guarded by ring_mu_

  // State of the dispatch in progress (orchestrator thread unless noted).
  const OrchestrationCall* call_ = nullptr;
  std::vector<const KernelBinding*> kernel_by_id_;
  TensorMap tensor_map_{false};
  std::vector<Dependency> deps_scratch_;
  std::vector<int32_t> scope_stack_;
  // run_lone_task_inline: the first task, ready but not yet queued, until a second
  // is submitted (then queued) or the orchestration returns (then run inline); -1: none.
  int32_t held_slot_ = -1;
  DispatchRecord record_;
  std::vector<PmuEvent> pmu_events_;
  std::chrono::steady_clock::time_point deadline_;
  std::mutex failure_mu_;
  std::string failure_;            // first failure; guarded by failure_mu_
  std::atomic<bool> failed_{false};
  bool poisoned_ = false;  // a kernel outlived the deadline: no further dispatches
};

}  // namespace pypto::chip
