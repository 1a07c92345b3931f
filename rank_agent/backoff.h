// Backoff for every polling loop of the data plane. Eight rank agents share
// two cores here, each with several core threads: a loop that spins without
// yielding starves the very peer it waits for. So spin only briefly (cheap
// when the peer is running on the other core), then yield, then sleep with a
// growing interval capped well below a millisecond.
#pragma once

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace pypto::rank {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

class Backoff {
 public:
  struct Options {
    int spins = 64;   // cpu_relax() rounds before the first yield
    int yields = 16;  // sched_yield() rounds before the first sleep
    std::chrono::microseconds first_sleep{10};
    std::chrono::microseconds max_sleep{250};
  };

  Backoff() : Backoff(Options{}) {}
  explicit Backoff(const Options& options) : options_(options), sleep_(options.first_sleep) {}

  // One step of waiting; call it between two polls.
  void pause() {
    if (step_ < options_.spins) {
      ++step_;
      cpu_relax();
    } else if (step_ < options_.spins + options_.yields) {
      ++step_;
      sched_yield();
    } else {
      std::this_thread::sleep_for(sleep_);  // nanosleep
      sleep_ = std::min(sleep_ * 2, options_.max_sleep);
    }
  }

  // True once the loop has left the spin phase: time to look at the clock.
  bool past_spin() const { return step_ >= options_.spins; }
  std::chrono::microseconds current_sleep() const { return sleep_; }

 private:
  Options options_;
  int step_ = 0;
  std::chrono::microseconds sleep_;
};

}  // namespace pypto::rank
