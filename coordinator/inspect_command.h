// pypto-coord inspect: what a user asks first about a build directory.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <ostream>
#include <string>

namespace pypto::coord {

struct InspectArgs {
  std::string dir;
  bool json = false;
};

// Loads and validates the build directory (every sidecar), and describes it:
// kind, platform, world size and device ids, host parameters, per rank the
// programs and kernels with their sources and the binary-cache state of each.
// Validation errors propagate as ArtifactError (exit code 3).
nlohmann::json describe_build_dir(const std::filesystem::path& dir);

// Human-readable rendering of describe_build_dir's result.
std::string format_description(const nlohmann::json& description);

int run_inspect(const InspectArgs& args, std::ostream& out);

}  // namespace pypto::coord
