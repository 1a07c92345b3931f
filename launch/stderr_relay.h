// Copies what a child writes to a pipe onto our stderr as it arrives, and
// hands every complete line to a callback on the way: pypto-coord reads the
// rank agents' mpirun's own account of how a rank ended (launch/mpirun_notice.h)
// while the user still sees every byte mpirun wrote, in order.
//
// A block framed by two rules of dashes (how mpirun writes its notices) is
// held until its closing rule and then copied, unless `drop_block` says it is
// not for the user (the coordinator drops mpirun's "the job was aborted"
// banners once it has reported the failure that made it abort the job).
//
// One thread per relay, sleeping in poll(2); it ends at end of file (every
// writer closed the pipe) or when finish() gives up waiting for it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace pypto::launch {

class StderrRelay {
 public:
  // Called on the relay's thread, once per line, without the newline.
  using LineHandler = std::function<void(std::string_view line)>;

  // Called on the relay's thread with a whole framed block, rules included.
  using BlockFilter = std::function<bool(std::string_view block)>;

  // Takes ownership of `read_fd`; copies to `out_fd` (not owned).
  StderrRelay(int read_fd, int out_fd, LineHandler on_line, BlockFilter drop_block = {});
  StderrRelay(const StderrRelay&) = delete;
  StderrRelay& operator=(const StderrRelay&) = delete;
  ~StderrRelay();  // finish(now)

  // Waits until every writer has closed the pipe (all it wrote is copied and
  // handled) or until `deadline`, whichever comes first, then stops relaying:
  // a process that outlives the job and keeps the pipe open cannot hold the
  // caller. Idempotent. True when the end of the pipe was reached.
  bool finish(std::chrono::steady_clock::time_point deadline);

 private:
  void run();
  void take(std::string_view bytes);
  void copy(std::string_view bytes);
  // At the end: what is still held back goes out.
  void flush_held();

  int read_fd_;
  int out_fd_;
  int wake_[2] = {-1, -1};  // finish() writes here to stop the thread
  LineHandler on_line_;
  BlockFilter drop_block_;
  // Relay thread only: the line being read, how much of it was copied already,
  // and a framed block held back until its closing rule.
  std::string partial_;
  size_t partial_copied_ = 0;
  std::string held_;
  std::mutex mutex_;
  std::condition_variable ended_;
  bool at_end_ = false;
  bool finished_ = false;
  std::thread thread_;
};

}  // namespace pypto::launch
