// The fields compiled_meta.json (L2) and distributed_meta.json (L3) share:
// the program, its parameters and its target (docs/build-directory.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/json_reader.h"
#include "pypto/param_info.h"
#include "pypto/scalar_param.h"

namespace pypto {

struct ProgramMeta {
  std::string program;  // L2: the chip orchestration; L3: the host orchestrator
  std::vector<ParamInfo> params;
  // Scalar parameters (optional in the file): the orchestration receives them
  // after the tensors, in this order.
  std::vector<ScalarParam> scalars;
  int64_t num_return_types = 0;
  std::string platform;  // a2a3sim | a2a3 | a5sim | a5
  std::string arch;      // a2a3 | a5, the prefix of platform
  std::string compiler_version;

  // Checks the schema and reads the shared fields of `root`.
  void read_program_fields(JsonObject& root);
  // {"schema", "program", "params", ...}: the shared part of the document.
  Json program_fields_json() const;

  bool operator==(const ProgramMeta&) const = default;
};

}  // namespace pypto
