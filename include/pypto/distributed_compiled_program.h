// DistributedCompiledProgram: an L3 build directory loaded from its sidecars
// alone — the host plan and one L2 sub-build per rank. A description only: no
// splice, no cache invalidation, no compile (docs/cache-and-replay.md); a
// DistributedWorker (pypto/distributed_worker.h) runs it, and pypto::call runs
// it once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pypto/build_kind.h"
#include "pypto/golden_spec.h"
#include "pypto/param_info.h"
#include "pypto/scalar_param.h"

namespace pypto {

namespace fs = std::filesystem;

// The sidecars' parsed contents (artifact/distributed_meta.h, artifact/host_orch.h):
// the runtime's own types, not installed.
struct DistributedMeta;
struct HostOrch;
struct Dispatch;
// One rank's sub-build: next_levels/<r>/ and its kernel_config.json
// (artifact/chip_build.h).
struct ChipBuild;

// What a run may change without recompiling.
struct DistributedOverrides {
  std::optional<std::string> platform;             // within the recorded architecture
  std::optional<std::vector<int64_t>> device_ids;  // world_size distinct ids >= 0
};

// Checks a --device-ids override against the build's world size; throws UsageError.
void check_device_ids_override(const std::vector<int64_t>& device_ids, int64_t world_size);

class DistributedCompiledProgram {
 public:
  // Loads and validates the L3 build in `dir`: distributed_meta.json,
  // orchestration/host_orch.json, next_levels/<r>/kernel_config.json for every
  // rank, golden/ when present, and the checks across them (ranks within the
  // world, host parameters and boxes, dispatched programs and their
  // signatures). Throws ArtifactError / InfraError (exit 3), UsageError for a
  // bad override.
  static DistributedCompiledProgram from_dir(const fs::path& dir,
                                             const DistributedOverrides& overrides = {});

  BuildKind kind() const { return BuildKind::kL3; }
  const fs::path& dir() const { return dir_; }
  const std::optional<GoldenSpec>& golden() const;

  const std::string& name() const;
  const std::vector<ParamInfo>& params() const;
  const std::vector<ScalarParam>& scalars() const;
  int64_t world_size() const;
  // The effective platform and device ids: overrides, else the recorded ones.
  const std::string& platform() const { return platform_; }
  const std::string& recorded_platform() const;
  const std::string& arch() const;
  const std::vector<int64_t>& device_ids() const { return device_ids_; }

  // The runtime's own view of the build (types above, not installed).
  const DistributedMeta& meta() const;
  const HostOrch& host_orch() const;
  // Sub-builds indexed by rank, 0 .. world_size-1.
  const std::vector<ChipBuild>& chips() const;
  const ChipBuild& chip(int64_t rank) const;
  // Rank `rank`'s dispatches in execution order.
  std::vector<const Dispatch*> dispatches_of(int64_t rank) const;

 private:
  DistributedCompiledProgram() = default;

  struct Contents;  // meta, host plan, sub-builds, golden spec: shared by copies, never changed

  fs::path dir_;
  std::shared_ptr<const Contents> contents_;
  std::string platform_;
  std::vector<int64_t> device_ids_;
};

}  // namespace pypto
