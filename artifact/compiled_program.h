// CompiledProgram: an L2 build directory loaded from its sidecars alone — a
// description of the program, nothing more. from_dir() does not splice
// ptoas/ bodies, invalidate the binary cache or compile anything (docs/cache-and-replay.md:
// exactly as PyPTO's from_dir); the execute layer runs what it describes.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "artifact/build_kind.h"
#include "artifact/compiled_meta.h"
#include "artifact/golden_spec.h"
#include "artifact/kernel_config.h"
#include "artifact/param_info.h"
#include "common/run_config.h"
#include "common/tensor.h"

namespace pypto {

namespace fs = std::filesystem;

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
  const CompiledMeta& meta() const { return meta_; }
  const KernelConfig& kernel_config() const { return config_; }
  // Absent when the build has no golden/.
  const std::optional<GoldenSpec>& golden() const { return golden_; }

  const std::string& name() const { return meta_.program; }
  const std::vector<ParamInfo>& params() const { return meta_.params; }
  // Scalar parameters with their recorded defaults (compiled_meta.json "scalars").
  const std::vector<ScalarParam>& scalars() const { return meta_.scalars; }
  // The effective platform: the override, else the recorded one.
  const std::string& platform() const { return platform_; }
  const std::string& recorded_platform() const { return meta_.platform; }
  const std::string& arch() const { return meta_.arch; }
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

  // A copy that runs on `platform` (same checks as from_dir's override).
  CompiledProgram with_platform(const std::string& platform) const;

  // Runs the program once, as PyPTO's CompiledProgram.__call__: with a
  // `config`, the config decides everything about the run — platform, device
  // id, DFX and ring sizes (a config passed only for ring sizes carries the
  // rest too); without one, the recorded (or from_dir-overridden) platform
  // and defaults. Out params in `args` are written in place.
  // A convenience that forwards to a ChipWorker of the execute layer: it is
  // defined in orchestration/compiled_program_call.cc (link pypto_orchestration).
  void operator()(std::vector<Tensor>& args,
                  const std::optional<RunConfig>& config = std::nullopt) const;

 private:
  CompiledProgram() = default;

  fs::path dir_;
  CompiledMeta meta_;
  KernelConfig config_;
  std::optional<GoldenSpec> golden_;
  std::string platform_;
};

}  // namespace pypto
