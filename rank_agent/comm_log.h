// The agent's ring of recent communication operations: every comm call a
// kernel makes (kind, window, peer, cell, value, the task and core it ran on,
// when it started and ended), kept per dispatch. With --swimlane the agent
// writes them as comm_ops.json beside the dispatch's swimlane records, and the
// run's timeline draws waits as slices and each notify -> wait as an arrow
// between ranks (docs/dfx.md).
#pragma once

#include <atomic>
#include <cstdint>
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
  int64_t task_id = -1;
  int32_t core_id = -1;
  int64_t start_ns = 0;  // CLOCK_MONOTONIC, as the swimlane records
  int64_t end_ns = 0;
  bool ok = true;  // false: the call failed (its error was reported)
};

// Safe to record into from every core thread at once; read it between
// dispatches. Keeps the most recent `capacity` operations.
class CommLog {
 public:
  explicit CommLog(size_t capacity = 4096);
  void record(const CommOp& op) noexcept;
  // The kept operations, oldest first.
  std::vector<CommOp> recent() const;
  // Recorded since the last clear(), kept or not.
  uint64_t recorded() const { return next_.load(std::memory_order_acquire); }
  void clear() { next_.store(0, std::memory_order_release); }

 private:
  std::vector<CommOp> slots_;
  std::atomic<uint64_t> next_{0};
};

// comm_ops.json of one dispatch: {"schema": 1, "rank", "recorded", "dropped",
// "ops": [{"kind", "window", "window_id", "peer", "offset", "cell", "bytes",
// "value", "mode", "task_id", "core_id", "start_ns", "end_ns", "ok"}]}; a
// cell is the element index of `offset` in the window's dtype.
Json comm_ops_json(const CommLog& log, const WindowSet& windows, int rank);

}  // namespace pypto::rank
