// An exclusive advisory lock (flock) on a lock file, held for the lifetime of
// the object. Processes that compile the same kernel on one host serialize on
// such a lock so each binary is built once. The kernel drops the lock when
// the holder dies, so a crashed holder never blocks the others.
#pragma once

#include <chrono>
#include <filesystem>

namespace pypto {

class FileLock {
 public:
  static constexpr std::chrono::milliseconds kDefaultTimeout = std::chrono::minutes(10);

  // Creates `path` (and its directory) when needed and waits until the lock is
  // held. Throws InfraError naming the lock file when it cannot be opened or
  // when `timeout` passes while another process holds it.
  explicit FileLock(const std::filesystem::path& path,
                    std::chrono::milliseconds timeout = kDefaultTimeout);
  ~FileLock();

  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  void release() noexcept;

  std::filesystem::path path_;
  int fd_ = -1;
};

}  // namespace pypto
