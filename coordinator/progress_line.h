// A progress line for long waits of a command (bench rounds): rewritten in
// place on a terminal, at most ten times a second, and erased when done, so
// the command's output is what it would be without it. Quiet when stderr is
// not a terminal (pipes, CI logs, files).
#pragma once

#include <chrono>
#include <string>

namespace pypto::coord {

class ProgressLine {
 public:
  // On stderr when it is a terminal (and TERM is not "dumb"); quiet otherwise.
  static ProgressLine on_stderr(std::string what);
  // The same on `fd`, shown only when `enabled` (the tests' seam).
  ProgressLine(std::string what, int fd, bool enabled);
  ~ProgressLine();  // erases the line
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // "<what>: <step> <done>/<total>[, last <ms> ms]"; drawn when 100 ms have
  // passed since the last drawing, or when done == total.
  void update(const std::string& step, int done, int total, double last_ms = -1);
  void clear();

 private:
  void write(const std::string& text);

  std::string what_;
  int fd_;
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace pypto::coord
