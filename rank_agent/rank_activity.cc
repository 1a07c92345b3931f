#include "rank_agent/rank_activity.h"

#include "orchestration/dispatch_record.h"
#include "pypto/kernel_abi.h"
#include "rank_agent/atomics.h"

namespace pypto::rank {

void RankActivity::dispatch_started(int64_t index, std::string program,
                                    std::vector<std::string> window_names,
                                    std::vector<uint64_t> cell_bytes) {
  comm_log_.clear();
  std::lock_guard<std::mutex> lock(mu_);
  state_ = wire::RankState{};
  state_.dispatch = index;
  state_.program = std::move(program);
  state_.running = true;
  state_.start_ns = chip::now_ns();
  window_names_ = std::move(window_names);
  cell_bytes_ = std::move(cell_bytes);
}

void RankActivity::dispatch_ended(bool ok, std::string error) {
  std::lock_guard<std::mutex> lock(mu_);
  state_.running = false;
  state_.ok = ok;
  state_.error = std::move(error);
  state_.end_ns = chip::now_ns();
}

wire::RankState RankActivity::snapshot() const {
  wire::RankState state;
  std::vector<std::string> names;
  std::vector<uint64_t> cell_bytes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    state = state_;
    names = window_names_;
    cell_bytes = cell_bytes_;
  }
  state.now_ns = chip::now_ns();
  for (const chip::RunningTask& task : board_.running())
    state.tasks.push_back({task.core_id, task.core_type == PYPTO_CORE_AIC ? "aic" : "aiv",
                           task.task_id, task.func_id, task.kernel, task.start_ns});
  state.comm_ops_recorded = comm_log_.recorded();
  for (const CommOp& op : comm_log_.recent(kSnapshotOps)) {
    wire::WireCommOp wire_op;
    wire_op.kind = comm_op_kind_name(op.kind);
    if (op.window >= 0 && static_cast<size_t>(op.window) < names.size()) {
      wire_op.window = names[static_cast<size_t>(op.window)];
      wire_op.cell = static_cast<int64_t>(op.offset / cell_bytes[static_cast<size_t>(op.window)]);
    }
    wire_op.peer = op.peer;
    wire_op.value = op.value;
    if (op.kind == CommOpKind::kNotify) wire_op.mode = op.mode == PYPTO_STORE_ADD ? "add" : "set";
    if (op.kind == CommOpKind::kWait) {
      const char* cmp = cmp_name(op.mode);
      wire_op.mode = cmp ? cmp : "?";
      wire_op.observed = op.observed;
    }
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
