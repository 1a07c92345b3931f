#include "common/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include "pypto/error.h"

namespace pypto {

FileLock::FileLock(const std::filesystem::path& path, std::chrono::milliseconds timeout)
    : path_(path) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw InfraError("cannot open lock file " + path.string() + ": " + std::strerror(errno) +
                     "; check that its directory is writable");

  // flock has no timed variant: try without blocking and sleep between tries,
  // backing off to 50 ms so a long compile by another process costs no CPU.
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + timeout;
  auto backoff = std::chrono::milliseconds(1);
  while (true) {
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
    int err = errno;
    if (err == EINTR) continue;
    if (err != EWOULDBLOCK) {
      release();
      throw InfraError("cannot lock " + path.string() + ": " + std::strerror(err));
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      release();
      auto waited = std::chrono::duration_cast<std::chrono::seconds>(now - start).count();
      throw InfraError("timed out after " + std::to_string(waited) + " s waiting for the lock " +
                       path.string() +
                       ": another process holds it (a concurrent compile of the same "
                       "kernel?); if that process hangs, stop it and run again");
    }
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(backoff, deadline - now));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(50));
  }
}

FileLock::~FileLock() { release(); }

FileLock::FileLock(FileLock&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void FileLock::release() noexcept {
  if (fd_ < 0) return;
  ::flock(fd_, LOCK_UN);
  ::close(fd_);  // closing alone would release it too; unlocking first is explicit
  fd_ = -1;
}

}  // namespace pypto
