#include "rank_agent/comm_log.h"

#include <algorithm>

#include "pypto/dtype.h"
#include "pypto/kernel_abi.h"
#include "rank_agent/atomics.h"
#include "rank_agent/window_set.h"

namespace pypto::rank {

const char* comm_op_kind_name(CommOpKind kind) {
  switch (kind) {
    case CommOpKind::kRemoteLoad: return "remote_load";
    case CommOpKind::kRemoteStore: return "remote_store";
    case CommOpKind::kRemoteAdd: return "remote_add";
    case CommOpKind::kPut: return "put";
    case CommOpKind::kGet: return "get";
    case CommOpKind::kNotify: return "notify";
    case CommOpKind::kWait: return "wait";
    case CommOpKind::kBarrier: return "barrier";
  }
  return "?";
}

CommLog::CommLog(size_t capacity)
    : capacity_(std::max<size_t>(capacity, 1)), slots_(new Slot[capacity_]) {}

uint64_t CommLog::begin(const CommOp& op) noexcept {
  // Each caller owns the slot its ticket names; a slot is reused only after
  // `capacity` later operations, long after its writer finished.
  const uint64_t ticket = next_.fetch_add(1, std::memory_order_acq_rel);
  Slot& slot = slot_of(ticket);
  slot.version.fetch_add(1, std::memory_order_acq_rel);
  slot.op = op;
  slot.observed.store(op.observed, std::memory_order_relaxed);
  slot.ticket.store(ticket, std::memory_order_relaxed);
  slot.version.fetch_add(1, std::memory_order_release);
  return ticket;
}

void CommLog::observe(uint64_t ticket, int32_t value) noexcept {
  Slot& slot = slot_of(ticket);
  if (slot.ticket.load(std::memory_order_relaxed) == ticket)
    slot.observed.store(value, std::memory_order_relaxed);
}

void CommLog::finish(uint64_t ticket, int64_t end_ns, bool ok) noexcept {
  Slot& slot = slot_of(ticket);
  if (slot.ticket.load(std::memory_order_relaxed) != ticket) return;  // overwritten meanwhile
  slot.version.fetch_add(1, std::memory_order_acq_rel);
  slot.op.end_ns = end_ns;
  slot.op.ok = ok;
  slot.version.fetch_add(1, std::memory_order_release);
}

std::vector<CommOp> CommLog::recent(size_t limit) const {
  const uint64_t total = next_.load(std::memory_order_acquire);
  const uint64_t first = base_.load(std::memory_order_acquire);
  const uint64_t kept = std::min<uint64_t>({total - first, capacity_, limit});
  std::vector<CommOp> ops;
  ops.reserve(kept);
  for (uint64_t ticket = total - kept; ticket < total; ++ticket) {
    const Slot& slot = slot_of(ticket);
    // A writer in the slot: read again (it is done within a few stores).
    for (int attempt = 0; attempt < 100; ++attempt) {
      const uint64_t before = slot.version.load(std::memory_order_acquire);
      if (before % 2) continue;
      if (slot.ticket.load(std::memory_order_relaxed) != ticket) break;  // not written yet, or reused
      CommOp op = slot.op;
      op.observed = slot.observed.load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (slot.version.load(std::memory_order_relaxed) != before) continue;
      ops.push_back(op);
      break;
    }
  }
  return ops;
}

CommWindows comm_windows(const WindowSet& windows) {
  CommWindows result;
  for (int w = 0; w < windows.size(); ++w)
    result.push_back({windows.spec(w).name, dtype_size(windows.spec(w).dtype)});
  return result;
}

const char* comm_op_mode_name(const CommOp& op) {
  if (op.kind == CommOpKind::kNotify) return op.mode == PYPTO_STORE_ADD ? "add" : "set";
  if (op.kind != CommOpKind::kWait) return nullptr;
  const char* cmp = cmp_name(op.mode);
  return cmp ? cmp : "?";
}

Json comm_ops_json(const CommLog& log, const CommWindows& windows, int rank) {
  const std::vector<CommOp> ops = log.recent();
  Json list = Json::array();
  for (const CommOp& op : ops) {
    Json e = {{"kind", comm_op_kind_name(op.kind)}, {"task_id", op.task_id},
              {"core_id", op.core_id}, {"start_ns", op.start_ns}, {"end_ns", op.end_ns},
              {"ok", op.ok}};
    if (op.window >= 0 && static_cast<size_t>(op.window) < windows.size()) {
      const CommWindow& window = windows[static_cast<size_t>(op.window)];
      e["window"] = window.name;
      e["window_id"] = op.window;
      e["offset"] = op.offset;
      e["cell"] = op.offset / window.cell_bytes;
    }
    if (op.peer >= 0) e["peer"] = op.peer;
    if (op.bytes) e["bytes"] = op.bytes;
    if (const char* mode = comm_op_mode_name(op)) {
      e["value"] = op.value;
      e[op.kind == CommOpKind::kNotify ? "op" : "cmp"] = mode;
      if (op.kind == CommOpKind::kWait) e["observed"] = op.observed;
    }
    list.push_back(std::move(e));
  }
  return {{"schema", 1},
          {"clock", "CLOCK_MONOTONIC ns"},
          {"rank", rank},
          {"recorded", log.recorded()},
          {"dropped", log.recorded() - ops.size()},
          {"ops", std::move(list)}};
}

}  // namespace pypto::rank
