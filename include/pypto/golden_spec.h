// golden/golden.json: tolerances and the outputs a --validate run checks
// (docs/build-directory.md). golden/ is optional; when present it must be
// complete: an expected file per output and an input file per In/InOut
// parameter.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "pypto/param_info.h"

namespace pypto {

namespace fs = std::filesystem;

class JsonObject;  // common/json_reader.h (not installed)

struct GoldenSpec {
  double rtol = 0;
  double atol = 0;
  std::vector<std::string> outputs;  // Out/InOut parameters to check
  int64_t seed = 0;                  // informational

  // Reads and validates <dir>/golden/golden.json against the program's
  // parameters, including the golden/inputs and golden/expected files.
  static GoldenSpec load(const fs::path& dir, const std::vector<ParamInfo>& params);
  // nullopt when <dir>/golden/ does not exist; otherwise load().
  static std::optional<GoldenSpec> load_if_present(const fs::path& dir,
                                                   const std::vector<ParamInfo>& params);
  // Validates a parsed document. File checks need `dir` (the build directory).
  static GoldenSpec from_json(JsonObject& root, const fs::path& dir,
                              const std::vector<ParamInfo>& params);
  Json to_json() const;
  // Writes <dir>/golden/golden.json atomically (not the .npy files).
  void write(const fs::path& dir) const;

  // <dir>/golden/inputs/<param>.npy and <dir>/golden/expected/<param>.npy.
  static fs::path input_path(const fs::path& dir, const std::string& param);
  static fs::path expected_path(const fs::path& dir, const std::string& param);

  bool operator==(const GoldenSpec&) const = default;
};

}  // namespace pypto
