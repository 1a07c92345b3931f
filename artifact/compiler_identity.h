// The host C++ compiler that assembles kernels, and the flags it gets.
// Internal to the artifact layer (the binary cache and the assembler).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace pypto {

struct CompilerIdentity {
  std::filesystem::path path;      // absolute; what is executed
  std::filesystem::path resolved;  // `path` with symbolic links resolved (c++ -> g++-12)
  std::string version;             // the whole `--version` output
  std::string chosen_by;           // "PYPTO_CXX", "CXX" or "PATH"

  // Path, resolved path and version: part of every binary cache key.
  std::string identity() const;
  // "<path> (<first line of --version>)", for the stamp and messages.
  std::string summary() const;
};

// Finds the compiler: $PYPTO_CXX, else $CXX, else `c++` on PATH (a value
// without '/' is looked up in PATH). Throws ToolError when it cannot be found.
std::filesystem::path resolve_host_compiler();

// resolve_host_compiler() plus its `--version`, cached per process (per
// choice of compiler, so changing PYPTO_CXX takes effect). Throws ToolError
// when the compiler cannot be found or does not answer; for the cache key
// this means the key cannot be established.
CompilerIdentity host_compiler_identity();

// Force-included into every source (and so part of every include closure).
inline constexpr const char* kKernelForcedHeader = "pypto/kernel_abi.h";

// Flags every kernel and orchestration source compiles with, independent of
// paths: these are what the cache key and the stamp record. The forced
// include makes every binary export pypto_abi_version(), checked at load.
const std::vector<std::string>& kernel_compile_flags();

// The full command: compiler, flags (the forced include as an absolute path),
// -I<include_dir>, -I<dir of source>, the source and -o output.
std::vector<std::string> kernel_compile_command(const std::filesystem::path& compiler,
                                                const std::filesystem::path& include_dir,
                                                const std::filesystem::path& source,
                                                const std::filesystem::path& output);

}  // namespace pypto
