// An Open MPI hostfile as the launcher needs it: each line `HOST [slots=N] ...`,
// `#` starting a comment (docs/launch.md "Several hosts").
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace pypto::launch {

struct HostfileEntry {
  std::string host;          // a name or an address, as written
  std::optional<long> slots;  // slots=N when given
};

// Throws InfraError naming the file when it cannot be read.
std::vector<HostfileEntry> read_hostfile(const std::filesystem::path& hostfile);

// The total of the slots= a hostfile declares; nullopt when some host has none
// (mpirun then counts that host's cores, which cannot be known from here).
std::optional<long> hostfile_slots(const std::filesystem::path& hostfile);

}  // namespace pypto::launch
