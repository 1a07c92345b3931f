// The times this process itself was not running, so that a watch loop does not
// blame a peer for a silence it caused: when the host freezes every process for
// seconds (a virtual machine not scheduled, memory being swapped), each side
// wakes to find the other silent past its deadline and declares it lost,
// though nobody failed. Each turn of the loop is a tick; a gap between ticks
// longer than the loop ever sleeps is a pause, and the silence that counts
// against a peer is the time since it was last heard minus the pauses since.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>

namespace pypto {

class PauseLog {
 public:
  using Clock = std::chrono::steady_clock;

  // `longest_sleep`: the longest one turn of the loop may take when the process
  // runs (its longest wait plus slack for a busy machine).
  explicit PauseLog(Clock::duration longest_sleep) : longest_sleep_(longest_sleep) {}

  // One turn of the loop, at `now`. Returns the pause it ended (zero if none).
  Clock::duration tick(Clock::time_point now);

  // How much of the time from `since` until now this process was paused.
  Clock::duration paused_since(Clock::time_point since) const;

  // The silence a peer last heard at `last_heard` is blamed for at `now`.
  Clock::duration silence(Clock::time_point last_heard, Clock::time_point now) const {
    return now - last_heard - paused_since(last_heard);
  }

 private:
  struct Pause {
    Clock::time_point start;
    Clock::time_point end;
  };
  // Enough for any deadline: older pauses only matter to a peer silent that long.
  static constexpr size_t kKept = 64;

  Clock::duration longest_sleep_;
  Clock::time_point last_tick_{};
  std::deque<Pause> pauses_;
};

}  // namespace pypto
