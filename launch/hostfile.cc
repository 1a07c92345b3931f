#include "launch/hostfile.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "pypto/error.h"

namespace pypto::launch {

std::vector<HostfileEntry> read_hostfile(const std::filesystem::path& hostfile) {
  std::ifstream in(hostfile);
  if (!in)
    throw InfraError("cannot read the hostfile " + hostfile.string() +
                     "; check the path given to --hostfile");
  std::vector<HostfileEntry> entries;
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    HostfileEntry entry;
    if (!(words >> entry.host)) continue;
    for (std::string word; words >> word;)
      if (word.rfind("slots=", 0) == 0) entry.slots = std::strtol(word.c_str() + 6, nullptr, 10);
    entries.push_back(std::move(entry));
  }
  return entries;
}

std::optional<long> hostfile_slots(const std::filesystem::path& hostfile) {
  long total = 0;
  for (const HostfileEntry& entry : read_hostfile(hostfile)) {
    if (!entry.slots) return std::nullopt;
    total += *entry.slots;
  }
  return total;
}

}  // namespace pypto::launch
