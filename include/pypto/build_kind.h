// Which kind of build a directory holds, decided by its marker files
// (docs/build-directory.md, "Kinds of build"): L2 has compiled_meta.json and
// kernel_config.json, L3 has distributed_meta.json and
// orchestration/host_orch.json. A directory with markers of both kinds or of
// neither is refused: a stale marker must never pick the wrong loader.
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

namespace pypto {

namespace fs = std::filesystem;

enum class BuildKind { kL2, kL3 };

// "L2", "L3".
const char* build_kind_name(BuildKind kind);
// The marker files of `kind`, relative to the build directory.
const std::vector<std::string_view>& build_kind_markers(BuildKind kind);

// Throws InfraError when `dir` does not exist, is not a directory, or holds
// markers of both kinds or of neither; the message names the files found.
BuildKind detect_build_kind(const fs::path& dir);

// Called by a fresh compile of kind `fresh_kind` into `dir`: removes only the
// other kind's marker files (sources, golden data and DFX stay). Throws
// InfraError when a marker cannot be removed.
void remove_markers_of_other_kind(const fs::path& dir, BuildKind fresh_kind);

}  // namespace pypto
