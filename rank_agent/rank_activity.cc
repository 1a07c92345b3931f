#include "rank_agent/rank_activity.h"

#include "common/seconds_text.h"
#include "orchestration/dispatch_record.h"
#include "pypto/kernel_abi.h"

namespace pypto::rank {

void RankActivity::dispatch_started(int64_t index, std::string program,
                                    std::shared_ptr<const CommWindows> windows,
                                    std::chrono::milliseconds timeout) {
  comm_log_.clear();
  std::lock_guard<std::mutex> lock(mu_);
  state_ = wire::RankState{};
  state_.dispatch = index;
  state_.program = std::move(program);
  state_.running = true;
  state_.start_ns = chip::now_ns();
  timeout_ = timeout;
  windows_ = std::move(windows);
}

void RankActivity::dispatch_ended(bool ok, std::string error) {
  std::lock_guard<std::mutex> lock(mu_);
  state_.running = false;
  state_.ok = ok;
  state_.error = std::move(error);
  state_.end_ns = chip::now_ns();
}

std::optional<int64_t> RankActivity::deadline_ns() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!state_.running) return std::nullopt;
  return state_.start_ns + std::chrono::nanoseconds(timeout_).count();
}

std::optional<std::string> RankActivity::overdue(int64_t now_ns,
                                                 std::chrono::milliseconds grace) const {
  std::string text;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!state_.running ||
        now_ns < state_.start_ns + std::chrono::nanoseconds(timeout_ + grace).count())
      return std::nullopt;
    text = "dispatch d" + std::to_string(state_.dispatch) + " (program '" + state_.program +
           "') still running " + seconds_text(grace) + " s after the dispatch deadline of " +
           seconds_text(timeout_) + " s: ";
  }
  const std::vector<chip::RunningTask> tasks = board_.running();
  if (tasks.empty()) {
    text += "no task is in a kernel (an orchestration that never returns?)";
  } else {
    text += std::to_string(tasks.size()) + " task(s) still running (a kernel that never returns?):";
    for (const chip::RunningTask& task : tasks)
      text += " task " + std::to_string(task.task_id) + " '" + task.kernel + "' on " +
              (task.core_type == PYPTO_CORE_AIC ? "aic" : "aiv") + " core " +
              std::to_string(task.core_id) + ";";
    text.pop_back();
  }
  return text + "; this process must be restarted";
}

wire::RankState RankActivity::snapshot() const {
  wire::RankState state;
  std::shared_ptr<const CommWindows> windows;
  {
    std::lock_guard<std::mutex> lock(mu_);
    state = state_;
    windows = windows_;
  }
  state.now_ns = chip::now_ns();
  for (const chip::RunningTask& task : board_.running())
    state.tasks.push_back({task.core_id, task.core_type == PYPTO_CORE_AIC ? "aic" : "aiv",
                           task.task_id, task.func_id, task.kernel, task.start_ns});
  state.comm_ops_recorded = comm_log_.recorded();
  for (const CommOp& op : comm_log_.recent(kSnapshotOps)) {
    wire::WireCommOp wire_op;
    wire_op.kind = comm_op_kind_name(op.kind);
    if (windows && op.window >= 0 && static_cast<size_t>(op.window) < windows->size()) {
      const CommWindow& window = (*windows)[static_cast<size_t>(op.window)];
      wire_op.window = window.name;
      wire_op.cell = static_cast<int64_t>(op.offset / window.cell_bytes);
    }
    wire_op.peer = op.peer;
    wire_op.value = op.value;
    if (const char* mode = comm_op_mode_name(op)) wire_op.mode = mode;
    if (op.kind == CommOpKind::kWait) wire_op.observed = op.observed;
    wire_op.task_id = op.task_id;
    wire_op.core_id = op.core_id;
    wire_op.start_ns = op.start_ns;
    wire_op.end_ns = op.end_ns;
    wire_op.ok = op.ok;
    state.comm_ops.push_back(std::move(wire_op));
  }
  return state;
}

}  // namespace pypto::rank
