// pypto-coord inspect: what a user asks first about a build directory.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>

namespace pypto::coord {

struct InspectArgs {
  std::string dir;
  bool json = false;
  std::string binary_store;  // L3: the host store to look in; empty: the one pypto-rank would use
};

// Loads and validates the build directory (every sidecar), and describes it:
// kind, platform, world size and device ids, host parameters, per rank the
// programs and kernels with their sources and the binary-cache state of each.
// An L2 build's state is that of its own cache/; an L3 build's is that of the
// host store its rank agents compile into: `binary_store`, else the default
// pypto-rank resolves (docs/cache-and-replay.md, "The store").
// Validation errors propagate as ArtifactError (exit code 3).
nlohmann::json describe_build_dir(
    const std::filesystem::path& dir,
    const std::optional<std::filesystem::path>& binary_store = std::nullopt);

// Human-readable rendering of describe_build_dir's result.
std::string format_description(const nlohmann::json& description);

int run_inspect(const InspectArgs& args, std::ostream& out);

}  // namespace pypto::coord
