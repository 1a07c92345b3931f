// The agent's ring of recent communication operations: every comm call a
// kernel makes (kind, window, peer, cell, value, the task and core it ran on,
// when it started and ended), kept per dispatch. With --swimlane the agent
// writes them as comm_ops.json beside the dispatch's swimlane records, and the
// run's timeline draws waits as slices and each notify -> wait as an arrow
// between ranks (docs/dfx.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/json_reader.h"

namespace pypto::rank {

class WindowSet;

enum class CommOpKind : uint8_t {
  kRemoteLoad, kRemoteStore, kRemoteAdd, kPut, kGet, kNotify, kWait, kBarrier
};

// "remote_load", "remote_store", "remote_add", "put", "get", "notify", "wait", "barrier".
const char* comm_op_kind_name(CommOpKind kind);

struct CommOp {
  CommOpKind kind = CommOpKind::kWait;
  int32_t window = -1;  // window id (-1: barrier)
  int32_t peer = -1;    // the rank whose copy it reads or writes (-1: own copy / all ranks)
  uint64_t offset = 0;  // bytes into the window
  uint64_t bytes = 0;   // moved (data ops)
  int32_t value = 0;    // notify: the value; wait: the expected value
  int32_t mode = 0;     // notify: pypto_store_op (set, add); wait: pypto_cmp
  int32_t observed = 0;  // wait: the value it last read of its cell
  int64_t task_id = -1;
  int32_t core_id = -1;
  int64_t start_ns = 0;  // CLOCK_MONOTONIC, as the swimlane records
  int64_t end_ns = 0;    // 0: still in progress
  bool ok = true;  // false: the call failed (its error was reported)
};

// Safe to record into from every core thread at once, and to read from any
// thread while they do (an operation is visible from its start, so a reader
// sees the waits still blocked). Keeps the most recent `capacity` operations.
class CommLog {
 public:
  explicit CommLog(size_t capacity = 4096);
  // Starts recording `op` (end_ns 0 until finish()); returns its ticket.
  uint64_t begin(const CommOp& op) noexcept;
  // A wait's latest reading of its cell.
  void observe(uint64_t ticket, int32_t value) noexcept;
  void finish(uint64_t ticket, int64_t end_ns, bool ok) noexcept;
  // A finished operation at once.
  void record(const CommOp& op) noexcept { begin(op); }
  // The kept operations in the order they started, at most the `limit` most recent.
  std::vector<CommOp> recent(size_t limit = SIZE_MAX) const;
  // Recorded since the last clear(), kept or not.
  uint64_t recorded() const {
    return next_.load(std::memory_order_acquire) - base_.load(std::memory_order_acquire);
  }
  // Between dispatches (one writer); readers may go on reading.
  void clear() { base_.store(next_.load(std::memory_order_acquire), std::memory_order_release); }

 private:
  struct Slot {
    // Odd while its writer changes it; tickets never repeat, so a reader
    // knows whether the slot still holds the operation it looks for.
    std::atomic<uint64_t> version{0};
    std::atomic<uint64_t> ticket{UINT64_MAX};
    std::atomic<int32_t> observed{0};
    CommOp op;
  };
  Slot& slot_of(uint64_t ticket) const { return slots_[ticket % capacity_]; }

  size_t capacity_;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<uint64_t> next_{0};
  std::atomic<uint64_t> base_{0};
};

// What a comm call's window id and byte offset name: each window's name and
// element size, by window id. Made once per window set.
struct CommWindow {
  std::string name;
  uint64_t cell_bytes = 1;
};
using CommWindows = std::vector<CommWindow>;
CommWindows comm_windows(const WindowSet& windows);

// "set" / "add" of a notify, the comparison of a wait ("ge", ...; "?" when not
// one), nullptr for the other kinds.
const char* comm_op_mode_name(const CommOp& op);

// comm_ops.json of one dispatch: {"schema": 1, "rank", "recorded", "dropped",
// "ops": [{"kind", "window", "window_id", "peer", "offset", "cell", "bytes",
// "value", "op" / "cmp", "observed", "task_id", "core_id", "start_ns", "end_ns",
// "ok"}]}; a cell is the element index of `offset` in the window's dtype.
Json comm_ops_json(const CommLog& log, const CommWindows& windows, int rank);

}  // namespace pypto::rank
