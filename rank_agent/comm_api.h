// The kernel-side communication table (pypto_comm_api in
// include/pypto/kernel_abi.h) over a WindowSet. A dispatch on
// an L3 rank sets ctx->comm = comm_api() and ctx->comm_state = &its
// CommState; every call checks its arguments, and a failure (bad window,
// peer, range, alignment, dtype; wait or barrier deadline; an MPI error)
// goes through ctx->hooks->report_error with the full message and returns -1.
#pragma once

#include <chrono>

#include "pypto/kernel_abi.h"
#include "rank_agent/comm_log.h"
#include "rank_agent/window_set.h"

namespace pypto::rank {

// Used until the agent passes --wait-timeout.
inline constexpr std::chrono::milliseconds kDefaultWaitTimeout{60'000};

// What ctx->comm_state points to. Immutable while a dispatch runs, so any
// number of core threads share one.
class CommState {
 public:
  explicit CommState(const WindowSet& windows,
                     std::chrono::milliseconds wait_timeout = kDefaultWaitTimeout)
      : windows_(&windows), wait_timeout_(wait_timeout) {}

  const WindowSet& windows() const { return *windows_; }
  int rank() const { return windows_->rank(); }
  // Deadline of every wait and barrier (--wait-timeout).
  std::chrono::milliseconds wait_timeout() const { return wait_timeout_; }
  // Between dispatches only.
  void set_wait_timeout(std::chrono::milliseconds timeout) { wait_timeout_ = timeout; }
  // Where every comm call of the dispatch is recorded (nullptr: nowhere).
  CommLog* log() const { return log_; }
  void set_log(CommLog* log) { log_ = log; }

 private:
  const WindowSet* windows_;
  std::chrono::milliseconds wait_timeout_;
  CommLog* log_ = nullptr;
};

// The table; static, valid for the life of the process.
//   remote_load, get        copy from a peer's copy (shm: memcpy; rma: MPI_Get + flush)
//   remote_store SET, put   copy into a peer's copy (shm: memcpy; rma: MPI_Put + flush)
//   remote_store ADD        element-wise atomic add: i8 i16 i32 i64 u8 f32 natively,
//                           f16/bf16 by a CAS loop; bool refused
//   notify                  SET/ADD on a peer's int32 cell, after releasing this
//                           rank's earlier stores
//   wait                    polls this rank's int32 cell with backoff until the
//                           deadline; the diagnostic names rank, window, cell,
//                           comparison, expected and last seen value
//   barrier                 all ranks of the world; one task per rank per dispatch
//   peer_pointer            the peer's mapped copy (shm), NULL on the rma path
const pypto_comm_api* comm_api();

}  // namespace pypto::rank
