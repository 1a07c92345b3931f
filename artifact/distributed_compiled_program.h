// DistributedCompiledProgram: an L3 build directory loaded from its sidecars
// alone — the host plan and one L2 sub-build per rank. A description only: no
// splice, no cache invalidation, no compile (docs/cache-and-replay.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "artifact/build_kind.h"
#include "artifact/distributed_meta.h"
#include "artifact/golden_spec.h"
#include "artifact/host_orch.h"
#include "artifact/kernel_config.h"
#include "artifact/param_info.h"
#include "common/run_config.h"
#include "common/tensor.h"

namespace pypto {

namespace fs = std::filesystem;

// One rank's sub-build: next_levels/<r>/ and its kernel_config.json.
struct ChipBuild {
  fs::path dir;
  KernelConfig config;
};

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
  const DistributedMeta& meta() const { return meta_; }
  const HostOrch& host_orch() const { return host_orch_; }
  const std::optional<GoldenSpec>& golden() const { return golden_; }

  const std::string& name() const { return meta_.program; }
  const std::vector<ParamInfo>& params() const { return meta_.params; }
  const std::vector<ScalarParam>& scalars() const { return meta_.scalars; }
  int64_t world_size() const { return meta_.world_size; }
  // The effective platform and device ids: overrides, else the recorded ones.
  const std::string& platform() const { return platform_; }
  const std::string& recorded_platform() const { return meta_.platform; }
  const std::string& arch() const { return meta_.arch; }
  const std::vector<int64_t>& device_ids() const { return device_ids_; }

  // Sub-builds indexed by rank, 0 .. world_size-1.
  const std::vector<ChipBuild>& chips() const { return chips_; }
  const ChipBuild& chip(int64_t rank) const { return chips_.at(static_cast<size_t>(rank)); }
  // Rank `rank`'s dispatches in execution order.
  std::vector<const Dispatch*> dispatches_of(int64_t rank) const;

  // Runs the program once, as PyPTO's distributed program call: launches the
  // agents (mpirun -n <world> pypto-rank), runs every dispatch, gathers Out
  // params into `args` (one tensor per host parameter) and shuts the agents
  // down. `config` sets the DFX switches, rings and device id (its platform must
  // be of the build's architecture). A convenience that forwards to a
  // DistributedWorker of the execute layer, defined in
  // coordinator/distributed_program_call.cc (link pypto_coordinator); prepare a
  // DistributedWorker yourself to run many times without relaunching.
  void operator()(std::vector<Tensor>& args,
                  const std::optional<RunConfig>& config = std::nullopt) const;

 private:
  DistributedCompiledProgram() = default;

  fs::path dir_;
  DistributedMeta meta_;
  HostOrch host_orch_;
  std::vector<ChipBuild> chips_;
  std::optional<GoldenSpec> golden_;
  std::string platform_;
  std::vector<int64_t> device_ids_;
};

}  // namespace pypto
