// Helpers of the L3 end-to-end tests: every run launches real rank agents
// under mpirun, tagged through the environment so a test can prove that no
// process of its run is left behind.
#pragma once

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "launch/job.h"
#include "tests/e2e/e2e_util.h"

namespace pypto::e2e {

inline const fs::path kRankBin = PYPTO_RANK_BIN;
inline const fs::path kMpirun = PYPTO_MPIEXEC;

// One blob store and binary store for the agents of every test of this
// process: a source compiles once per test run. Tests that count shipped bytes
// pass their own.
inline fs::path shared_agent_store() {
  return process_scratch_root() / "_agent_store";
}

// The environment of an L3 run: where pypto-coord finds pypto-rank, the
// agents' stores, and a tag naming the processes of this run.
inline std::vector<std::string> l3_env(const std::string& tag,
                                       const fs::path& store = shared_agent_store()) {
  return {"PYPTO_RANK=" + kRankBin.string(), "PYPTO_MPIRUN=" + kMpirun.string(),
          "PYPTO_BLOB_STORE=" + (store / "blobs").string(), "PYPTO_E2E_TAG=" + tag};
}

// Live processes whose environment holds PYPTO_E2E_TAG=<tag> (zombies excluded).
inline std::vector<pid_t> tagged_processes(const std::string& tag) {
  std::vector<pid_t> found;
  const std::string needle = "PYPTO_E2E_TAG=" + tag;
  DIR* proc = ::opendir("/proc");
  if (!proc) return found;
  while (dirent* entry = ::readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (pid <= 0 || pid == ::getpid()) continue;
    const std::string base = "/proc/" + std::string(entry->d_name);
    std::ifstream stat(base + "/stat");
    std::string line;
    std::getline(stat, line);
    const size_t paren = line.rfind(')');
    if (paren == std::string::npos || paren + 2 >= line.size() || line[paren + 2] == 'Z') continue;
    std::ifstream environ(base + "/environ", std::ios::binary);
    std::string env((std::istreambuf_iterator<char>(environ)), std::istreambuf_iterator<char>());
    size_t at = 0;
    while ((at = env.find(needle, at)) != std::string::npos) {
      const bool starts = at == 0 || env[at - 1] == '\0';
      const size_t end = at + needle.size();
      if (starts && (end == env.size() || env[end] == '\0')) {
        found.push_back(pid);
        break;
      }
      at = end;
    }
  }
  ::closedir(proc);
  return found;
}

// Waits up to `timeout` for every tagged process to be gone; the survivors.
inline std::vector<pid_t> survivors(const std::string& tag,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<pid_t> left = tagged_processes(tag);
  while (!left.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    left = tagged_processes(tag);
  }
  return left;
}

// The tagged pypto-rank process of MPI rank `rank`, or -1.
inline pid_t agent_pid(const std::string& tag, int rank) {
  for (pid_t pid : tagged_processes(tag)) {
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    std::getline(comm, name);
    if (name != "pypto-rank") continue;
    std::ifstream environ("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
    std::string env((std::istreambuf_iterator<char>(environ)), std::istreambuf_iterator<char>());
    if (env.find(std::string("OMPI_COMM_WORLD_RANK=") + std::to_string(rank) + '\0') !=
        std::string::npos)
      return pid;
  }
  return -1;
}

// A command running in the background with stdout and stderr in files.
struct Background {
  launch::Job job;
  fs::path out;
  fs::path err;
  std::string stdout_text() const { return slurp(out); }
  std::string stderr_text() const { return slurp(err); }
};

inline Background start_background(const std::vector<std::string>& argv,
                                   const std::vector<std::string>& env, const std::string& name) {
  const fs::path dir = scratch_dir("bg_" + name);
  std::vector<std::string> sh{"/bin/sh", "-c", "exec \"$0\" \"$@\" >\"$BG_OUT\" 2>\"$BG_ERR\""};
  sh.insert(sh.end(), argv.begin(), argv.end());
  launch::JobOptions options;
  options.extra_env = env;
  options.extra_env.push_back("BG_OUT=" + (dir / "out").string());
  options.extra_env.push_back("BG_ERR=" + (dir / "err").string());
  return Background{launch::Job::start(sh, options), dir / "out", dir / "err"};
}

// Waits until `file` contains `text` (true) or `timeout` passes (false).
inline bool wait_for_text(const fs::path& file, const std::string& text,
                          std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (contains(slurp(file), text)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// The run key `pypto-coord run --agents external` prints in the command it asks you to
// run ("PYPTO_RUN_KEY='<80 characters>' mpirun -x PYPTO_RUN_KEY ..."); empty when it
// did not print one within `timeout`.
inline std::string printed_run_key(const Background& coordinator,
                                   std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  const std::string marker = "PYPTO_RUN_KEY='";
  if (!wait_for_text(coordinator.err, "' mpirun -x PYPTO_RUN_KEY", timeout)) return "";
  const std::string err = coordinator.stderr_text();
  const size_t at = err.find(marker);
  if (at == std::string::npos) return "";
  return err.substr(at + marker.size(), err.find('\'', at + marker.size()) - at - marker.size());
}

// A loopback TCP port nobody listens on right now (bound to port 0, then released).
inline int free_tcp_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0)
    port = ntohs(address.sin_port);
  ::close(fd);
  return port;
}

}  // namespace pypto::e2e
