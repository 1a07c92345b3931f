#include "coordinator/progress_line.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace pypto::coord {

namespace {
constexpr std::chrono::milliseconds kRedraw{100};
}  // namespace

ProgressLine ProgressLine::on_stderr(std::string what) {
  const char* term = std::getenv("TERM");
  const bool tty = ::isatty(STDERR_FILENO) == 1 && !(term && std::strcmp(term, "dumb") == 0);
  return ProgressLine(std::move(what), STDERR_FILENO, tty);
}

ProgressLine::ProgressLine(std::string what, int fd, bool enabled)
    : what_(std::move(what)), fd_(fd), enabled_(enabled) {}

ProgressLine::~ProgressLine() { clear(); }

void ProgressLine::write(const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n <= 0) return;  // a progress line is never worth an error
    done += static_cast<size_t>(n);
  }
}

void ProgressLine::update(const std::string& step, int done, int total, double last_ms) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (shown_ && done != total && now - last_draw_ < kRedraw) return;
  last_draw_ = now;
  char ms[32] = "";
  if (last_ms >= 0) std::snprintf(ms, sizeof(ms), ", last %.3f ms", last_ms);
  // \r and erase-to-end: the line is redrawn where it stands.
  write("\r" + what_ + ": " + step + " " + std::to_string(done) + "/" + std::to_string(total) +
        ms + "\033[K");
  shown_ = true;
}

void ProgressLine::clear() {
  if (!enabled_ || !shown_) return;
  write("\r\033[K");
  shown_ = false;
}

}  // namespace pypto::coord
