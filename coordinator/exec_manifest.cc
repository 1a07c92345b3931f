#include "coordinator/exec_manifest.h"

#include <memory>

#include "common/fs_util.h"
#include "common/json_reader.h"
#include "pypto/error.h"

namespace pypto::coord {

namespace {

constexpr const char* kManifestRemedy =
    "A manifest is a JSON list of objects {\"work_dir\": \"<build dir>\", \"platform\": "
    "\"a2a3sim\"} (platform optional; relative work_dirs are relative to the manifest's "
    "directory)";

}  // namespace

std::vector<ManifestEntry> read_exec_manifest(const fs::path& manifest) {
  const std::string display = manifest.string();
  std::error_code ec;
  if (!fs::is_regular_file(manifest, ec))
    throw ArtifactError(display, "", fs::exists(manifest, ec) ? "is not a regular file"
                                                              : "does not exist",
                        kManifestRemedy);
  std::string text;
  try {
    text = read_file(manifest);
  } catch (const Error& e) {
    throw ArtifactError(display, "", std::string("cannot be read (") + e.what() + ")",
                        kManifestRemedy);
  }
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw ArtifactError(display, "",
                        (text.empty() ? std::string("is empty")
                                      : "is not valid JSON: parse error at byte " +
                                            std::to_string(e.byte)),
                        kManifestRemedy);
  }
  if (!root.is_array())
    throw ArtifactError(display, "", std::string("must be a JSON list, found ") + root.type_name(),
                        kManifestRemedy);

  auto source = std::make_shared<JsonSource>(JsonSource{display, kManifestRemedy});
  const fs::path base = manifest.parent_path();
  std::vector<ManifestEntry> entries;
  for (size_t i = 0; i < root.size(); ++i) {
    JsonObject obj(root[i], source, "[" + std::to_string(i) + "]");
    ManifestEntry entry;
    entry.work_dir = obj.string("work_dir");
    if (entry.work_dir.empty()) obj.fail("work_dir", "is empty");
    entry.platform = obj.optional_string("platform");
    obj.reject_unknown_keys();
    const fs::path wd(entry.work_dir);
    entry.path = wd.is_absolute() ? wd : base / wd;
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace pypto::coord
