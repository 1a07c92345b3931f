// CompiledProgram: an L2 build directory loaded from its sidecars alone — a
// description of the program, nothing more. from_dir() does not splice
// ptoas/ bodies, invalidate the binary cache or compile anything (docs/cache-and-replay.md:
// exactly as PyPTO's from_dir); a ChipWorker (pypto/chip_worker.h) runs what it
// describes, and pypto::call runs it once.
#pragma once

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

// The sidecars' parsed contents (artifact/compiled_meta.h, artifact/kernel_config.h):
// the runtime's own types, not installed.
struct CompiledMeta;
struct KernelConfig;
struct OrchestrationInfo;

// Checks a --platform override: a known platform of the build's `arch`.
// Throws UsageError naming the valid choices.
void check_platform_override(const std::string& platform, const std::string& arch);

class CompiledProgram {
 public:
  // Loads and validates the L2 build in `dir`, including the cross-file
  // checks (compiled_meta.program names an orchestration whose signature
  // matches the parameters). `platform_override` replaces the recorded
  // platform (a2a3sim -> a2a3), within the recorded architecture.
  // Throws ArtifactError / InfraError (exit 3), UsageError for a bad override.
  static CompiledProgram from_dir(const fs::path& dir,
                                  std::optional<std::string> platform_override = {});

  BuildKind kind() const { return BuildKind::kL2; }
  const fs::path& dir() const { return dir_; }
  // Absent when the build has no golden/.
  const std::optional<GoldenSpec>& golden() const;

  const std::string& name() const;
  const std::vector<ParamInfo>& params() const;
  // Scalar parameters with their recorded defaults (compiled_meta.json "scalars").
  const std::vector<ScalarParam>& scalars() const;
  // The effective platform: the override, else the recorded one.
  const std::string& platform() const { return platform_; }
  const std::string& recorded_platform() const;
  const std::string& arch() const;

  // A copy that runs on `platform` (same checks as from_dir's override).
  CompiledProgram with_platform(const std::string& platform) const;

  // The runtime's own view of the build (types above, not installed).
  const CompiledMeta& meta() const;
  const KernelConfig& kernel_config() const;
  // The orchestration compiled_meta.program names.
  const OrchestrationInfo& orchestration() const;

  // One rank's sub-build of an L3 build (next_levels/<r>/, or a rank agent's
  // workspace copy of it), which has no compiled_meta.json, as the program
  // that runs its orchestration `program` with `params`: the tensor arguments
  // of the dispatch, in order (the sub-build's windows and scalars are not
  // parameters; they travel in the DispatchContext). Checks that `program` is
  // an orchestration of kernel_config.json whose tensor signature matches the
  // params' directions. Throws ArtifactError (exit 3).
  static CompiledProgram from_sub_build(const fs::path& dir, const std::string& program,
                                        std::vector<ParamInfo> params, const std::string& platform,
                                        const std::string& arch);
  // The same with dir's kernel_config.json already loaded (a rank agent loads it
  // once per build, not once per dispatch).
  static CompiledProgram from_sub_build(const fs::path& dir, KernelConfig config,
                                        const std::string& program, std::vector<ParamInfo> params,
                                        const std::string& platform, const std::string& arch);

 private:
  struct Contents;  // meta, kernel config, golden spec: shared by copies, never changed
  CompiledProgram() = default;

  fs::path dir_;
  std::shared_ptr<const Contents> contents_;
  std::string platform_;
};

}  // namespace pypto
