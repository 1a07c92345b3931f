// The batch manifest of `pypto-coord exec --manifest m.json`: the format of
// PyPTO's execute_artifact --batch-manifest, a JSON list of
// {"work_dir": ..., "platform": ...} (platform optional here).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace pypto::coord {

namespace fs = std::filesystem;

struct ManifestEntry {
  std::string work_dir;  // as written in the manifest; the markers repeat it
  fs::path path;         // relative work_dirs resolved against the manifest's directory
  std::optional<std::string> platform;
};

// Throws ArtifactError (exit 3) naming the manifest, and the entry and field
// when one is wrong: an unreadable file, invalid JSON, not a list, an entry
// that is not an object, a missing or empty work_dir, a platform that is not
// a string, an unknown key.
std::vector<ManifestEntry> read_exec_manifest(const fs::path& manifest);

}  // namespace pypto::coord
