#include "rank_agent/cpu_placement.h"

#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "pypto/error.h"

namespace pypto::rank {

std::vector<int> cpu_share(int local_rank, int local_size, const std::vector<int>& allowed) {
  const int m = static_cast<int>(allowed.size());
  if (m == 0 || local_size <= 0 || local_rank < 0 || local_rank >= local_size) return {};
  if (local_size > m) return {allowed[static_cast<size_t>(local_rank % m)]};
  const int first = local_rank * m / local_size;
  const int last = (local_rank + 1) * m / local_size;
  return std::vector<int>(allowed.begin() + first, allowed.begin() + last);
}

namespace {

// A small non-negative integer from the environment, or -1.
int env_int(const char* name) {
  const char* text = std::getenv(name);
  if (!text || !*text) return -1;
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  return *end == '\0' && v >= 0 && v < (1 << 20) ? static_cast<int>(v) : -1;
}

std::string cpu_list(const std::vector<int>& cpus) {
  std::string s;
  for (int c : cpus) s += (s.empty() ? "" : ",") + std::to_string(c);
  return s;
}

}  // namespace

std::string place_on_cpus() {
  const char* mode = std::getenv("PYPTO_CPU_PLACEMENT");
  const std::string m = mode ? mode : "";
  if (m == "none") return "PYPTO_CPU_PLACEMENT=none: left unbound";
  if (!m.empty() && m != "auto")
    throw UsageError("PYPTO_CPU_PLACEMENT is '" + m +
                     "'; it must be 'auto' (share the host's CPUs among its ranks, the default) "
                     "or 'none' (leave the agents unbound)");
  const int local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK");
  const int local_size = env_int("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (local_rank < 0 || local_size <= 0) return "no local rank from mpirun: left unbound";
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) != 0) return "cannot read the CPU mask: left unbound";
  std::vector<int> allowed;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &mask)) allowed.push_back(c);
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (online <= 0 || static_cast<long>(allowed.size()) < online)
    return "already bound to CPUs " + cpu_list(allowed) + ": left as it is";
  const std::vector<int> share = cpu_share(local_rank, local_size, allowed);
  if (share.empty()) return "local rank out of range: left unbound";
  cpu_set_t want;
  CPU_ZERO(&want);
  for (int c : share) CPU_SET(c, &want);
  if (sched_setaffinity(0, sizeof want, &want) != 0) return "cannot set the CPU mask: left unbound";
  return "local rank " + std::to_string(local_rank) + " of " + std::to_string(local_size) +
         " on CPUs " + cpu_list(share);
}

}  // namespace pypto::rank
