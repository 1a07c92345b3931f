// Where the kernel ABI headers (pypto/kernel_abi.h, docs/windows.md) are found at
// run time, when kernels are assembled. Internal to the artifact layer.
#pragma once

#include <filesystem>

namespace pypto {

// The directory that holds pypto/kernel_abi.h, in this order:
//   1. $PYPTO_INCLUDE_DIR (must contain pypto/kernel_abi.h, else InfraError);
//   2. the installed copy beside the running executable: <exe_dir>/../share/pypto/include;
//   3. the source tree this binary was built from (<repo>/include).
// Throws InfraError listing where it looked and saying to set PYPTO_INCLUDE_DIR.
std::filesystem::path kernel_include_dir();

}  // namespace pypto
