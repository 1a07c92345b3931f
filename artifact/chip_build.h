// One rank's sub-build of an L3 build: next_levels/<r>/ and its kernel_config.json,
// as DistributedCompiledProgram::chips() lists them.
#pragma once

#include <filesystem>

#include "artifact/kernel_config.h"

namespace pypto {

struct ChipBuild {
  std::filesystem::path dir;
  KernelConfig config;
};

}  // namespace pypto
