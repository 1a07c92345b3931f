// Helpers shared by the launch tests: a scratch directory, files and fake
// executables in it, and waiting (with sleeps) for processes to come and go.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/scratch_dir.h"

namespace pypto::launch::testing {

namespace fs = std::filesystem;

class TempDir : public ScratchDir {
 public:
  TempDir() : ScratchDir("pypto_launch") {}
};

inline void write_file(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

inline fs::path write_executable(const fs::path& path, const std::string& script) {
  write_file(path, script);
  ::chmod(path.c_str(), 0755);
  return path;
}

inline std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Polls `done` every 10 ms until it holds or `timeout` passes.
inline bool eventually(const std::function<bool()>& done,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// The pids a test job wrote, one a line, once `count` of them are there.
inline std::vector<pid_t> read_pids(const fs::path& file, size_t count) {
  std::vector<pid_t> pids;
  eventually([&] {
    pids.clear();
    std::istringstream lines(read_file(file));
    for (long pid; lines >> pid;) pids.push_back(static_cast<pid_t>(pid));
    return pids.size() >= count;
  });
  return pids;
}

// The test binary adopts the orphans of the jobs it starts (a child
// subreaper), so that it can reap a killed grandchild itself: init here reaps
// orphaned zombies only every second or two, and kill(pid, 0) succeeds on a
// zombie. The jobs' behaviour does not change: they are killed all the same.
inline const bool kAdoptsOrphans = ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;

// True once `pid` no longer exists (reaping it when it is an adopted zombie).
inline bool process_gone(pid_t pid, std::chrono::milliseconds within = std::chrono::seconds(5)) {
  return eventually(
      [&] {
        ::waitpid(pid, nullptr, WNOHANG);
        return ::kill(pid, 0) != 0 && errno == ESRCH;
      },
      within);
}

}  // namespace pypto::launch::testing
