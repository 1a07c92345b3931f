// What this rank is doing, for the coordinator's STATE_QUERY after a dispatch
// failed or stalled (docs/dfx.md "Why a run hangs"): the current (or last)
// dispatch, the tasks in a kernel now and the dispatch's recent comm calls,
// waits still blocked included. The worker thread writes it around each
// dispatch and the cores post to its board and log; the control thread reads
// a snapshot at any time, without stopping anything.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/wire/protocol.h"
#include "orchestration/task_board.h"
#include "rank_agent/comm_log.h"

namespace pypto::rank {

class RankActivity {
 public:
  // Comm calls a snapshot carries at most (the most recent).
  static constexpr size_t kSnapshotOps = 128;

  chip::TaskBoard& board() { return board_; }
  CommLog& comm_log() { return comm_log_; }
  const CommLog& comm_log() const { return comm_log_; }

  // Worker thread: a dispatch begins (clears the log) and ends. `windows`
  // names the window ids of the snapshot's comm calls; `timeout` is the
  // dispatch's deadline, counted from now.
  void dispatch_started(int64_t index, std::string program,
                        std::shared_ptr<const CommWindows> windows,
                        std::chrono::milliseconds timeout);
  void dispatch_ended(bool ok, std::string error);

  // Any thread.
  wire::RankState snapshot() const;
  // The running dispatch's deadline (CLOCK_MONOTONIC ns); none between dispatches.
  std::optional<int64_t> deadline_ns() const;
  // When a dispatch is still running at `now_ns`, `grace` past its deadline:
  // what is still running, for the error that ends the process. The runtime
  // fails a dispatch at the deadline itself unless the thread that would do so
  // is the one stuck (a lone task run inline, an orchestration that never
  // returns); the control thread then asks this.
  std::optional<std::string> overdue(int64_t now_ns, std::chrono::milliseconds grace) const;

 private:
  chip::TaskBoard board_;
  CommLog comm_log_;
  mutable std::mutex mu_;
  wire::RankState state_;  // without tasks and comm calls; guarded by mu_
  std::chrono::milliseconds timeout_{0};  // guarded by mu_
  std::shared_ptr<const CommWindows> windows_;  // guarded by mu_
};

}  // namespace pypto::rank
