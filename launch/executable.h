// Locating the programs a launch runs (mpirun, pypto-rank).
#pragma once

#include <filesystem>
#include <optional>

namespace pypto::launch {

// `program` as an absolute path when it names an executable regular file: a
// name with a '/' is taken as a path (relative to the working directory), a
// bare name is looked up in PATH. nullopt otherwise.
std::optional<std::filesystem::path> resolve_executable(const std::filesystem::path& program);

}  // namespace pypto::launch
