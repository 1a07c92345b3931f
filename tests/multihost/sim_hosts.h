// Simulated hosts for the multi-host tests: tests/multihost/simhosts made into
// an RAII object (docs/multihost-testing.md). Each host is a network
// namespace with an address from 198.18.0.0/15, its own hostname and its own
// XDG_CACHE_HOME; `on(i, argv)` runs a command there.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/subprocess.h"

namespace pypto::multihost {

namespace fs = std::filesystem;

inline const fs::path kSimhosts = fs::path(PYPTO_SOURCE_DIR) / "tests/multihost/simhosts";

inline SubprocessResult run_simhosts(const std::vector<std::string>& args,
                                     std::chrono::seconds timeout = std::chrono::seconds(60)) {
  std::vector<std::string> argv{kSimhosts.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  SubprocessOptions options;
  options.timeout = timeout;
  return run_subprocess(argv, options);
}

class SimHosts {
 public:
  // Why simulated hosts cannot be made here (no CAP_NET_ADMIN, no iproute2),
  // or nullopt when they can.
  static std::optional<std::string> unavailable() {
    const SubprocessResult r = run_simhosts({"check"});
    if (r.exit_code == 0) return std::nullopt;
    return r.output.empty() ? r.describe() : r.output;
  }

  SimHosts(fs::path dir, int hosts) : dir_(std::move(dir)), hosts_(hosts) {
    fs::create_directories(dir_);
    const SubprocessResult r = run_simhosts({"up", dir_.string(), std::to_string(hosts)});
    if (r.exit_code != 0) throw std::runtime_error("simhosts up failed: " + r.output);
    std::istringstream lines(r.output);
    std::string name;
    std::string address;
    while (lines >> name >> address) addresses_.push_back(address);
    std::ifstream env(dir_ / "env");
    for (std::string line; std::getline(env, line);)
      if (line.rfind("SIM_TAG=", 0) == 0) tag_ = line.substr(8);
  }
  ~SimHosts() { run_simhosts({"down", dir_.string()}); }
  SimHosts(const SimHosts&) = delete;
  SimHosts& operator=(const SimHosts&) = delete;

  int size() const { return hosts_; }
  const fs::path& dir() const { return dir_; }
  const std::string& address(int host) const { return addresses_.at(static_cast<size_t>(host)); }
  // The name `hostname` prints on host i (what MPI and the agents report).
  std::string hostname(int host) const { return tag_ + "-h" + std::to_string(host); }
  std::string ssh() const { return (dir_ / "ssh").string(); }
  // Open MPI's rsh launcher goes through the stand-in instead of ssh.
  std::string rsh_agent_args() const { return "--mca plm_rsh_agent " + ssh(); }

  // argv run on host i.
  std::vector<std::string> on(int host, const std::vector<std::string>& argv) const {
    std::vector<std::string> wrapped{kSimhosts.string(), "exec", dir_.string(),
                                     "h" + std::to_string(host), "--"};
    wrapped.insert(wrapped.end(), argv.begin(), argv.end());
    return wrapped;
  }

  // A hostfile giving host i slots[i] slots (0: left out).
  fs::path hostfile(const std::vector<int>& slots, const std::string& name) const {
    const fs::path path = dir_ / name;
    std::ofstream out(path);
    for (size_t i = 0; i < slots.size(); ++i)
      if (slots[i] > 0) out << address(static_cast<int>(i)) << " slots=" << slots[i] << "\n";
    return path;
  }

  // Live processes on host i (in its network namespace).
  std::vector<pid_t> processes(int host) const {
    SubprocessOptions options;
    options.timeout = std::chrono::seconds(10);
    const SubprocessResult r =
        run_subprocess({"ip", "netns", "pids", tag_ + "-h" + std::to_string(host)}, options);
    std::vector<pid_t> pids;
    std::istringstream words(r.output);
    for (long pid; words >> pid;) {
      std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
      std::string line;
      std::getline(stat, line);
      const size_t paren = line.rfind(')');
      if (paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z')
        pids.push_back(static_cast<pid_t>(pid));
    }
    return pids;
  }

  // Waits up to `timeout` until no process is left on any host; what is left.
  std::map<int, std::vector<pid_t>> leftovers(
      std::chrono::milliseconds timeout = std::chrono::seconds(10)) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::map<int, std::vector<pid_t>> left;
    do {
      left.clear();
      for (int h = 0; h < hosts_; ++h)
        if (auto pids = processes(h); !pids.empty()) left[h] = pids;
      if (left.empty()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    } while (std::chrono::steady_clock::now() < deadline);
    return left;
  }

  // Kills everything on host i (all its ranks, its orted): the host "dies".
  void kill_all(int host) const {
    for (pid_t pid : processes(host)) ::kill(pid, SIGKILL);
  }

  // Cuts (false) or restores (true) host i's link: a partition, nothing dies.
  void set_link(int host, bool up) const {
    run_simhosts({"link", dir_.string(), "h" + std::to_string(host), up ? "up" : "down"});
  }

 private:
  fs::path dir_;
  int hosts_;
  std::string tag_;
  std::vector<std::string> addresses_;
};

inline std::string describe(const std::map<int, std::vector<pid_t>>& left) {
  std::string text;
  for (const auto& [host, pids] : left) {
    text += "h" + std::to_string(host) + ":";
    for (pid_t pid : pids) {
      std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline");
      std::string cmd((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
      for (char& c : cmd)
        if (c == '\0') c = ' ';
      text += " [" + std::to_string(pid) + "] " + cmd.substr(0, 120);
    }
    text += "\n";
  }
  return text;
}

}  // namespace pypto::multihost
