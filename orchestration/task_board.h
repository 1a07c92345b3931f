// What every core of a chip runtime is running right now: the task, its
// kernel and since when. The core threads post to it around each kernel call;
// another thread (a rank agent's control thread, asked for its state after a
// peer's wait expired) reads it while the dispatch runs, without stopping it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace pypto::chip {

struct RunningTask {
  int32_t core_id = -1;
  int32_t core_type = 0;  // pypto_core_type
  int64_t task_id = -1;
  int32_t func_id = -1;
  std::string kernel;    // the kernel's name ("" when its func id is unknown)
  int64_t start_ns = 0;  // CLOCK_MONOTONIC
};

class TaskBoard {
 public:
  // Cores beyond this are not shown (a simulated chip has at most 16).
  static constexpr int kMaxCores = 64;

  TaskBoard();

  // Before a dispatch's first task: the kernels' names by func id.
  void begin_dispatch(std::vector<std::string> kernel_by_func_id);
  // Around each kernel call, from the core's own thread; lock-free.
  void task_started(int32_t core_id, int32_t core_type, int64_t task_id, int32_t func_id,
                    int64_t start_ns) noexcept;
  void task_ended(int32_t core_id) noexcept;

  // The tasks in a kernel now, by core; from any thread.
  std::vector<RunningTask> running() const;

 private:
  struct Slot {
    // Odd while the core rewrites the slot: a reader then tries again.
    std::atomic<uint64_t> version{0};
    std::atomic<int64_t> task_id{-1};
    std::atomic<int32_t> func_id{-1};
    std::atomic<int32_t> core_type{0};
    std::atomic<int64_t> start_ns{0};
  };
  std::unique_ptr<Slot[]> slots_;
  mutable std::mutex names_mu_;
  std::vector<std::string> kernel_by_func_id_;  // guarded by names_mu_
};

}  // namespace pypto::chip
