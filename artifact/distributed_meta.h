// distributed_meta.json: an L3 build's host parameters, target and world
// (docs/build-directory.md). That next_levels/<r>/ exists for every rank is
// checked by DistributedCompiledProgram::from_dir, which loads them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "artifact/program_meta.h"
#include "common/json_reader.h"
#include "pypto/run_config.h"  // DistributedConfig

namespace pypto {

namespace fs = std::filesystem;

// program names the host orchestrator.
struct DistributedMeta : ProgramMeta {  int64_t world_size = 1;
  DistributedConfig distributed_config;

  // Reads and validates <dir>/distributed_meta.json; throws ArtifactError.
  static DistributedMeta load(const fs::path& dir);
  static DistributedMeta from_json(JsonObject& root);
  Json to_json() const;
  // Writes <dir>/distributed_meta.json atomically.
  void write(const fs::path& dir) const;

  bool operator==(const DistributedMeta&) const = default;
};

}  // namespace pypto
