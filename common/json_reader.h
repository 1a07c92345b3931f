// Strict reading of JSON sidecars. Every problem (missing key, wrong type,
// unknown key, bad value) becomes an ArtifactError naming the file, the field
// path ("kernels[2].source") and the remedy given by the caller.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace pypto {

using Json = nlohmann::json;

struct JsonSource {
  std::string file;    // as shown in messages, e.g. "build/x/kernel_config.json"
  std::string remedy;  // what to do, e.g. "recompile with pypto-compile ... -o build/x"
};

class JsonObject {
 public:
  JsonObject(const Json& value, std::shared_ptr<const JsonSource> source, std::string path);

  std::string string(const std::string& key);
  int64_t integer(const std::string& key);
  double number(const std::string& key);
  bool boolean(const std::string& key);
  JsonObject object(const std::string& key);
  std::vector<JsonObject> objects(const std::string& key);
  std::vector<int64_t> integers(const std::string& key);
  std::vector<std::string> strings(const std::string& key);
  // The raw value, for fields whose type varies (scalar or list); marks the key as read.
  const Json& raw(const std::string& key);

  bool has(const std::string& key) const;
  std::optional<std::string> optional_string(const std::string& key);
  std::optional<int64_t> optional_integer(const std::string& key);

  // Checks "schema" equals `supported`.
  void expect_schema(int64_t supported);
  // Rejects every key that no accessor asked for.
  void reject_unknown_keys();

  // Throws ArtifactError for `key` (or the object itself when key is empty).
  [[noreturn]] void fail(const std::string& key, const std::string& problem) const;
  std::string field_path(const std::string& key) const;
  const JsonSource& source() const { return *source_; }

 private:
  const Json& require(const std::string& key, Json::value_t type, const char* type_name);

  const Json* value_;
  std::shared_ptr<const JsonSource> source_;
  std::string path_;
  std::set<std::string> read_;
};

// Parses `path` as a JSON object. A missing, unreadable, truncated or
// non-object file throws ArtifactError with `display` and `remedy`.
JsonObject load_json_object(const std::filesystem::path& path, const std::string& display,
                            const std::string& remedy, Json& storage);

// Serialises with two-space indentation and a trailing newline, then writes atomically.
void write_json_atomic(const std::filesystem::path& path, const Json& value);

}  // namespace pypto
