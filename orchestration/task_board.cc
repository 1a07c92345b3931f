#include "orchestration/task_board.h"

#include <thread>

namespace pypto::chip {

TaskBoard::TaskBoard() : slots_(new Slot[kMaxCores]) {}

void TaskBoard::begin_dispatch(std::vector<std::string> kernel_by_func_id) {
  std::lock_guard<std::mutex> lock(names_mu_);
  kernel_by_func_id_ = std::move(kernel_by_func_id);
}

void TaskBoard::task_started(int32_t core_id, int32_t core_type, int64_t task_id, int32_t func_id,
                             int64_t start_ns) noexcept {
  if (core_id < 0 || core_id >= kMaxCores) return;
  Slot& slot = slots_[core_id];
  slot.version.fetch_add(1, std::memory_order_acq_rel);
  slot.func_id.store(func_id, std::memory_order_relaxed);
  slot.core_type.store(core_type, std::memory_order_relaxed);
  slot.start_ns.store(start_ns, std::memory_order_relaxed);
  slot.task_id.store(task_id, std::memory_order_relaxed);
  slot.version.fetch_add(1, std::memory_order_release);
}

void TaskBoard::task_ended(int32_t core_id) noexcept {
  if (core_id < 0 || core_id >= kMaxCores) return;
  slots_[core_id].task_id.store(-1, std::memory_order_release);
}

std::vector<RunningTask> TaskBoard::running() const {
  std::vector<RunningTask> tasks;
  std::lock_guard<std::mutex> lock(names_mu_);
  for (int32_t core = 0; core < kMaxCores; ++core) {
    const Slot& slot = slots_[core];
    RunningTask task;
    // A core rewriting its slot meanwhile: read again, yielding so that a
    // writer preempted mid-entry (ranks run oversubscribed) can finish. A
    // slot that never reads whole is left out rather than shown torn.
    bool whole = false;
    for (int attempt = 0; attempt < 1000 && !whole; ++attempt) {
      if (attempt > 0) std::this_thread::yield();
      const uint64_t before = slot.version.load(std::memory_order_acquire);
      if (before % 2) continue;
      task.task_id = slot.task_id.load(std::memory_order_acquire);
      task.func_id = slot.func_id.load(std::memory_order_relaxed);
      task.core_type = slot.core_type.load(std::memory_order_relaxed);
      task.start_ns = slot.start_ns.load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      whole = slot.version.load(std::memory_order_relaxed) == before;
    }
    if (!whole) continue;
    if (task.task_id < 0) continue;
    task.core_id = core;
    if (task.func_id >= 0 && static_cast<size_t>(task.func_id) < kernel_by_func_id_.size())
      task.kernel = kernel_by_func_id_[static_cast<size_t>(task.func_id)];
    tasks.push_back(std::move(task));
  }
  return tasks;
}

}  // namespace pypto::chip
