// What running, feeding and validating a build needs to know of it, whether it
// is an L2 CompiledProgram or an L3 DistributedCompiledProgram: its directory,
// name, host parameters and golden/.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "pypto/compiled_program.h"
#include "pypto/distributed_compiled_program.h"

namespace pypto::coord {

struct ProgramData {
  std::filesystem::path dir;
  std::string name;
  std::vector<ParamInfo> params;
  std::vector<ScalarParam> scalars;  // with the defaults golden/ was computed with
  std::optional<GoldenSpec> golden;

  ProgramData(const CompiledProgram& program)  // NOLINT(google-explicit-constructor)
      : dir(program.dir()), name(program.name()), params(program.params()),
        scalars(program.scalars()), golden(program.golden()) {}
  ProgramData(const DistributedCompiledProgram& program)  // NOLINT(google-explicit-constructor)
      : dir(program.dir()), name(program.name()), params(program.params()),
        scalars(program.scalars()), golden(program.golden()) {}
};

}  // namespace pypto::coord
