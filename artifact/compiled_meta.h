// compiled_meta.json: an L2 build's program, parameters and target
// (docs/build-directory.md). Checks against kernel_config.json live in
// CompiledProgram::from_dir, which sees both files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "artifact/program_meta.h"
#include "common/json_reader.h"

namespace pypto {

namespace fs = std::filesystem;

// program names the chip orchestration to call.
struct CompiledMeta : ProgramMeta {
  // Reads and validates <dir>/compiled_meta.json; throws ArtifactError.
  static CompiledMeta load(const fs::path& dir);
  // Validates an already-parsed document (the root object of the file).
  static CompiledMeta from_json(JsonObject& root);
  Json to_json() const;
  // Writes <dir>/compiled_meta.json atomically.
  void write(const fs::path& dir) const;

  bool operator==(const CompiledMeta&) const = default;
};

}  // namespace pypto
