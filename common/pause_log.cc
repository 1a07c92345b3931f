#include "common/pause_log.h"

#include <algorithm>

namespace pypto {

PauseLog::Clock::duration PauseLog::tick(Clock::time_point now) {
  const Clock::time_point previous = last_tick_;
  last_tick_ = now;
  if (previous == Clock::time_point{} || now - previous <= longest_sleep_) return {};
  // The loop could have slept until previous + longest_sleep_ on its own.
  Pause pause{previous + longest_sleep_, now};
  pauses_.push_back(pause);
  if (pauses_.size() > kKept) pauses_.pop_front();
  return pause.end - pause.start;
}

PauseLog::Clock::duration PauseLog::paused_since(Clock::time_point since) const {
  Clock::duration paused{};
  for (const Pause& pause : pauses_)
    if (pause.end > since) paused += pause.end - std::max(pause.start, since);
  return paused;
}

}  // namespace pypto
