// Manifests of a rank's sub-build (next_levels/<r>/) and the path rules every
// shipped path obeys (docs/protocol.md, "Paths"). A path on the wire is
// relative, '/'-separated and canonical: no absolute paths, no '.' or '..'
// components, no empty components, no backslashes, no NUL. Builds are made of
// regular files only: a symbolic link in a sub-build is refused, never followed.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/wire/protocol.h"

namespace pypto::wire {

namespace fs = std::filesystem;

// What build_manifest skips in next_levels/<r>/: per-host state and run outputs.
inline const std::vector<std::string> kSubBuildExcludes = {"cache", "dfx_outputs", "outputs"};

// Why `path` is not an acceptable shipped path, or nullopt when it is.
std::optional<std::string> relative_path_problem(std::string_view path);
// Throws InfraError "refusing path '../x': it has a '..' component" when it is not.
void validate_relative_path(std::string_view path);

// 64 lowercase hex digits.
bool is_sha256_hex(std::string_view text);

// Every path valid and unique, no path both a file and a directory of another, every hash
// well-formed. Throws InfraError naming the entry.
void validate_manifest(const Manifest& manifest);

// The manifest of the regular files under `dir` (sorted by path), skipping the relative
// paths in `exclude` and everything under them. Throws InfraError for a symbolic link or
// any other non-regular file (naming it and what to do), or when `dir` is not a directory.
Manifest build_manifest(const fs::path& dir, const std::vector<std::string>& exclude,
                        int32_t rank = 0);

// The distinct hashes of `manifest`, sorted.
std::vector<std::string> manifest_hashes(const Manifest& manifest);

}  // namespace pypto::wire
