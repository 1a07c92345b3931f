#include "launch/stderr_relay.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "pypto/error.h"

namespace pypto::launch {

namespace {

// A block longer than this is not a notice: copied without waiting for its end.
constexpr size_t kMaxHeldBlock = 64 * 1024;

bool is_rule(std::string_view line) {
  return line.size() >= 20 && line.find_first_not_of('-') == std::string_view::npos;
}

}  // namespace

StderrRelay::StderrRelay(int read_fd, int out_fd, LineHandler on_line, BlockFilter drop_block)
    : read_fd_(read_fd),
      out_fd_(out_fd),
      on_line_(std::move(on_line)),
      drop_block_(std::move(drop_block)) {
  if (::pipe2(wake_, O_CLOEXEC) != 0) {
    const int err = errno;
    ::close(read_fd_);
    throw InfraError(std::string("cannot create a pipe to relay mpirun's output: ") +
                     std::strerror(err));
  }
  thread_ = std::thread([this] { run(); });
}

StderrRelay::~StderrRelay() { finish(std::chrono::steady_clock::now()); }

void StderrRelay::copy(std::string_view bytes) {
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(out_fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // our stderr is gone: the lines are still handled
    done += static_cast<size_t>(n);
  }
}

void StderrRelay::take(std::string_view bytes) {
  partial_.append(bytes);
  size_t start = 0;
  for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
    const std::string_view line = std::string_view(partial_).substr(start, nl - start);
    const std::string_view with_newline = std::string_view(partial_).substr(start, nl + 1 - start);
    const size_t copied = start == 0 ? partial_copied_ : 0;
    if (!held_.empty()) {
      held_.append(with_newline);
      if (is_rule(line)) {  // the block is whole: copied, or dropped
        if (!drop_block_ || !drop_block_(held_)) copy(held_);
        held_.clear();
      } else if (held_.size() > kMaxHeldBlock) {
        flush_held();
      }
    } else if (drop_block_ && copied == 0 && is_rule(line)) {
      held_.assign(with_newline);  // a block opens: hold it until its closing rule
    } else {
      copy(with_newline.substr(copied));  // the user sees the output as it was written
    }
    if (on_line_) on_line_(line);
  }
  partial_.erase(0, start);
  if (start) partial_copied_ = 0;
  // A line still being written is copied as it arrives, unless it may be a rule.
  const bool maybe_rule = drop_block_ && partial_copied_ == 0 &&
                          partial_.find_first_not_of('-') == std::string::npos;
  if (held_.empty() && !maybe_rule) {
    copy(std::string_view(partial_).substr(partial_copied_));
    partial_copied_ = partial_.size();
  }
}

void StderrRelay::flush_held() {
  copy(held_);
  held_.clear();
}

void StderrRelay::run() {
  char buffer[16384];
  for (;;) {
    pollfd fds[2] = {{read_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents != 0) {
      const ssize_t n = ::read(read_fd_, buffer, sizeof buffer);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n > 0) {
        take(std::string_view(buffer, static_cast<size_t>(n)));
        continue;
      }
      // End of file (or an error that ends it the same way): the last line.
      flush_held();
      copy(std::string_view(partial_).substr(partial_copied_));
      if (!partial_.empty() && on_line_) on_line_(partial_);
      partial_.clear();
      std::lock_guard lock(mutex_);
      at_end_ = true;
      ended_.notify_all();
      return;
    }
    if (fds[1].revents != 0) return;
  }
  std::lock_guard lock(mutex_);
  at_end_ = true;
  ended_.notify_all();
}

bool StderrRelay::finish(std::chrono::steady_clock::time_point deadline) {
  bool reached_end;
  {
    std::unique_lock lock(mutex_);
    if (finished_) return at_end_;
    ended_.wait_until(lock, deadline, [&] { return at_end_; });
    reached_end = at_end_;
    finished_ = true;
  }
  const char stop = 1;
  while (::write(wake_[1], &stop, 1) < 0 && errno == EINTR) {
  }
  if (thread_.joinable()) thread_.join();
  ::close(read_fd_);
  ::close(wake_[0]);
  ::close(wake_[1]);
  return reached_end;
}

}  // namespace pypto::launch
