// Checks shared by the sidecar loaders: relative paths that must stay inside
// their directory, the platform/arch pair, C identifiers and unique names.
// Each failure is an ArtifactError through JsonObject::fail, so it names the
// file, the field and the remedy.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "common/json_reader.h"

namespace pypto {

namespace fs = std::filesystem;

// `[A-Za-z_][A-Za-z0-9_]*`.
bool is_c_identifier(std::string_view name);

// A path from a sidecar field, relative to `dir`: not empty, `/`-separated,
// not absolute, no `..`, and once resolved inside `dir` (a symbolic link may
// not lead out of it). Returns `dir / value`. Does not require the file to exist.
fs::path checked_relative_path(const JsonObject& obj, const std::string& key,
                               const std::string& value, const fs::path& dir);

// As checked_relative_path, and the path must name an existing regular file.
fs::path checked_existing_file(const JsonObject& obj, const std::string& key,
                               const std::string& value, const fs::path& dir);

// True when `path` (which must exist) resolves to a location inside `dir`.
bool resolves_inside(const fs::path& path, const fs::path& dir);

// a2a3sim, a2a3, a5sim, a5.
bool is_known_platform(std::string_view platform);
// a2a3, a5.
bool is_known_arch(std::string_view arch);
// "a2a3sim, a2a3, a5sim, a5", for messages.
const char* known_platforms();
// The architecture a known platform runs: its prefix (a2a3sim -> a2a3).
std::string arch_of_platform(std::string_view platform);

// Reads "platform" and "arch" of `obj` and checks that both are known and agree.
void read_platform_and_arch(JsonObject& obj, std::string& platform, std::string& arch);

// Reads a string field that must not be empty.
std::string non_empty_string(JsonObject& obj, const std::string& key);

// Remembers names/ids seen in a list and fails on the second occurrence,
// naming the entry that used it first.
template <typename Key>
class UniqueChecker {
 public:
  explicit UniqueChecker(std::string what) : what_(std::move(what)) {}
  // `obj` is the current entry ("kernels[1]"); `shown` the value as quoted in messages.
  void add(const JsonObject& obj, const std::string& key, const Key& value,
           const std::string& shown) {
    auto [it, inserted] = seen_.emplace(value, obj.field_path(""));
    if (!inserted)
      obj.fail(key, shown + " is already used by " + it->second + "; " + what_ + " must be unique");
  }

 private:
  std::string what_;
  std::map<Key, std::string> seen_;
};

}  // namespace pypto
