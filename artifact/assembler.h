// Assembly: kernel and orchestration C++ sources of a build directory ->
// shared objects, through the binary cache. Internal to the artifact layer
// (docs/architecture.md): no command exposes it on its own; run, replay and the rank
// agents reach it through the artifact layer.
#pragma once

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace pypto {

struct AssembleOptions {
  std::string platform;  // part of the cache key, as recorded in the build's meta
  std::string arch;
  // Where keyed binaries live; <build_dir>/cache/bin when unset. Rank agents
  // pass a host-wide store so identical sources compile once per host.
  std::optional<std::filesystem::path> store_dir;
  // Parallel compiles; one per core by default.
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  // When set, receives how many sources this call compiled and how many it found
  // compiled (in the store, or compiled meanwhile by another process of the host).
  struct Stats {
    size_t compiled = 0;
    size_t cached = 0;
  }* stats = nullptr;
};

// Source (relative to build_dir, '/'-separated) -> absolute path of its binary.
using AssembledBinaries = std::map<std::string, std::filesystem::path>;

// Compiles (or finds in the cache) every source, in parallel, then records
// them in <build_dir>/cache/binary_context.json. Every failure is collected
// before anything is thrown: one failing source throws its KernelCompileError;
// several throw one KernelCompileError naming each file with its diagnostics.
// A source that is not a relative path inside build_dir, or is missing,
// throws ArtifactError.
AssembledBinaries assemble(const std::filesystem::path& build_dir,
                           const std::vector<std::string>& rel_sources,
                           const AssembleOptions& options);

}  // namespace pypto
