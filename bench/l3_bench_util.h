// Helpers shared by the L3 benchmarks (bench/l3_*_bench.cc): statistics, the
// environment of a DistributedWorker run, child processes.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/scratch_dir.h"
#include "pypto/error.h"

extern char** environ;

namespace pypto::bench {

namespace fs = std::filesystem;

inline double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

inline double min_of(const std::vector<double>& values) {
  return values.empty() ? 0 : *std::min_element(values.begin(), values.end());
}

// The 1-minute load average (/proc/loadavg), printed beside every figure.
inline double load_average() {
  std::ifstream in("/proc/loadavg");
  double one = 0;
  in >> one;
  return one;
}

inline std::string join(const std::vector<double>& values, const char* format = "%.2f") {
  std::string out;
  char text[64];
  for (double v : values) {
    std::snprintf(text, sizeof text, format, v);
    out += (out.empty() ? "" : ",") + std::string(text);
  }
  return out;
}

// setenv unless the variable is already set (the caller's choice wins).
inline void default_env(const char* name, const std::string& value) {
  if (!std::getenv(name)) ::setenv(name, value.c_str(), 1);
}

// The environment a DistributedWorker needs to find pypto-rank and mpirun
// (PYPTO_RANK_BIN / PYPTO_MPIEXEC are compiled in by bench/CMakeLists.txt) and
// a blob + binary store of the benchmark's own (under `scratch`), unless the
// caller's environment already names them.
inline void l3_bench_env(const fs::path& scratch) {
  default_env("PYPTO_RANK", PYPTO_RANK_BIN);
  default_env("PYPTO_MPIRUN", PYPTO_MPIEXEC);
  default_env("PYPTO_BLOB_STORE", (scratch / "store" / "blobs").string());
}

// Runs argv (argv[0] an absolute path), stdout and stderr appended to `log`
// (or inherited when empty); returns the exit status (-1 when it did not exit).
inline int run_process(const std::vector<std::string>& argv, const fs::path& log = {}) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!log.empty()) {
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                     0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
  }
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw InfraError("cannot start " + argv[0] + ": " + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw InfraError("waitpid " + argv[0] + ": " + std::strerror(errno));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The benchmarks' scratch directories: removed when the benchmark ends, on an error too.
using pypto::ScratchDir;

}  // namespace pypto::bench
