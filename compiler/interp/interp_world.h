// Internal to the reference interpreter: what the rank threads share — the
// window buffers (one zeroed copy per rank) and their synchronization.
//
// One mutex guards every window copy of every rank, so each window access of
// a kernel (a load, a store, a remote add, a notify) is atomic as a whole;
// one condition variable wakes waiters after any window write. There is no
// busy waiting.
//
// Deadlock detection: a rank blocked in wait records the write generation at
// which it last found its condition false. When every rank that has not
// finished is blocked and none has seen a write since its last check, no rank
// can ever change a cell again: the run fails with a report of every blocked
// wait. A total deadline bounds the run as a safety net.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include "compiler/interp/interp_values.h"

namespace pypto::compiler::interp {

// Thrown in a rank thread that stops because another rank failed first; the
// run reports that first failure.
struct Aborted {};

struct WindowBuffer {
  std::string name;  // the host variable it was bound to
  DType dtype = DType::kF32;
  Shape shape;
  std::vector<Tensor> copies;  // one per rank
};

enum class Compare { kEq, kNe, kGt, kGe, kLt, kLe };
const char* compare_name(Compare cmp);
bool compare(int64_t value, Compare cmp, int64_t expected);

// A wait, as the deadlock report describes it.
struct WaitSite {
  std::string where;   // "file:line:col"
  std::string kernel;  // the kernel's name
  std::string cell;    // "'signal'[1, 0]"
  Compare cmp = Compare::kEq;
  int64_t expected = 0;
};

class World {
 public:
  World(int64_t ranks, std::chrono::milliseconds timeout);

  int64_t ranks() const { return static_cast<int64_t>(states_.size()); }

  // Before the rank threads start (the host function runs alone).
  WindowRef add_window(DType dtype, const Shape& shape);
  void name_window(WindowRef w, const std::string& name);
  const WindowBuffer& window(WindowRef w) const;

  // Runs f() with every window locked. `writes`: f changes a window, so waiters
  // re-check their cells.
  template <class F>
  void access(bool writes, F&& f) {
    std::lock_guard lock(mu_);
    if (aborted_) throw Aborted{};
    f();
    if (writes) {
      ++generation_;
      cv_.notify_all();
    }
  }

  // Blocks rank `rank` until cell `cell` of its copy of window `w` compares true
  // against `expected`. Throws ProgramError on a deadlock or the deadline,
  // Aborted when another rank failed.
  void wait(int64_t rank, WindowRef w, const Shape& cell, const WaitSite& site);

  // The rank's thread is done (normally or not); may reveal a deadlock of the others.
  void finish(int64_t rank);
  // Records the run's first failure and wakes every waiter so that it stops.
  void fail(std::exception_ptr error);
  std::exception_ptr failure();

  // Cheap checks for long computations: another rank failed, or the deadline passed.
  void check_progress();

 private:
  struct RankState {
    bool finished = false;
    bool waiting = false;
    uint64_t checked_generation = 0;
    WaitSite site;
    int64_t last_value = 0;
  };

  bool stuck_locked() const;
  static std::string wait_text(const RankState& s);
  const RankState* first_waiting_locked(int64_t& rank) const;
  // One line per rank: where it waits, "running" or "finished".
  std::string rank_list_locked() const;
  std::string deadlock_report_locked() const;
  std::string deadline_report_locked() const;
  void fail_locked(std::exception_ptr error);

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<WindowBuffer> windows_;
  std::vector<RankState> states_;
  uint64_t generation_ = 0;
  std::exception_ptr failure_;
  std::atomic<bool> aborted_{false};
  std::chrono::milliseconds timeout_;
  std::chrono::steady_clock::time_point deadline_;
};

}  // namespace pypto::compiler::interp
