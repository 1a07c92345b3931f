#include "artifact/compiled_program.h"

#include <system_error>

#include "artifact/build_paths.h"
#include "artifact/sidecar_checks.h"
#include "common/error.h"

namespace pypto {

namespace {

[[noreturn]] void fail_in(const fs::path& dir, std::string_view file, const std::string& field,
                          const std::string& problem) {
  throw ArtifactError(sidecar_display(dir, file), field, problem, recompile_remedy(dir));
}

// L2 builds have no window buffers, so no signature may ask for one.
template <typename Entry>
void reject_windows(const fs::path& dir, const std::vector<Entry>& entries, const char* list) {
  for (size_t i = 0; i < entries.size(); ++i)
    for (size_t j = 0; j < entries[i].signature.size(); ++j)
      if (entries[i].signature[j] == ArgKind::kWindow)
        fail_in(
            dir, kKernelConfigFile,
            std::string(list) + "[" + std::to_string(i) + "].signature[" + std::to_string(j) + "]",
            "is Window, but window buffers exist only in L3 builds; this is an L2 build");
}

// A directory next_levels/<r> of an L3 build looks like an L2 build without
// compiled_meta.json; say so instead of only "missing".
void explain_sub_build(const fs::path& dir) {
  std::error_code ec;
  fs::path top = compile_output_dir(dir);
  if (top == dir || fs::exists(dir / fs::path(kCompiledMetaFile), ec)) return;
  if (!fs::exists(top / fs::path(kDistributedMetaFile), ec)) return;
  throw InfraError(dir.generic_string() + " is a rank's sub-build of the L3 build " +
                   top.generic_string() + ", not an L2 build; load " + top.generic_string() +
                   " with DistributedCompiledProgram::from_dir (pypto-coord run/replay " +
                   top.generic_string() + ")");
}

}  // namespace

void check_platform_override(const std::string& platform, const std::string& arch) {
  if (!is_known_platform(platform))
    throw UsageError("platform '" + platform + "' is not a platform; expected one of " +
                     known_platforms());
  if (arch_of_platform(platform) != arch)
    throw UsageError("platform '" + platform + "' runs architecture " + arch_of_platform(platform) +
                     ", but the build was compiled for " + arch + "; choose " + arch + "sim or " +
                     arch + ", or recompile the program for the other architecture");
}

CompiledProgram CompiledProgram::from_dir(const fs::path& dir,
                                          std::optional<std::string> platform_override) {
  BuildKind kind = detect_build_kind(dir);
  if (kind != BuildKind::kL2)
    throw InfraError(dir.generic_string() + " is an L3 (distributed) build directory (" +
                     std::string(kDistributedMetaFile) + ", " + std::string(kHostOrchFile) +
                     "), not an L2 one; load it with DistributedCompiledProgram::from_dir — " +
                     "pypto-coord run/replay/exec detect the kind themselves");
  explain_sub_build(dir);

  CompiledProgram p;
  p.dir_ = dir;
  p.meta_ = CompiledMeta::load(dir);
  p.config_ = KernelConfig::load(dir);
  reject_windows(dir, p.config_.orchestrations, "orchestrations");
  reject_windows(dir, p.config_.kernels, "kernels");

  const OrchestrationInfo* orch = p.config_.find_orchestration(p.meta_.program);
  if (!orch)
    fail_in(dir, kCompiledMetaFile, "program",
            "names '" + p.meta_.program + "', which is not an orchestration of " +
                sidecar_display(dir, kKernelConfigFile) +
                " (it has: " + p.config_.orchestration_names() + ")");
  // The orchestration receives the program's tensor parameters in order, and
  // its scalar parameters (kernel ABI: tensors and scalars are separate arrays).
  size_t index = static_cast<size_t>(orch - p.config_.orchestrations.data());
  std::vector<ArgKind> tensor_kinds;
  size_t scalar_count = 0;
  for (ArgKind k : orch->signature) {
    if (k == ArgKind::kScalar)
      ++scalar_count;
    else
      tensor_kinds.push_back(k);
  }
  bool match = tensor_kinds.size() == p.meta_.params.size() &&
               scalar_count == p.meta_.scalars.size();
  for (size_t i = 0; match && i < tensor_kinds.size(); ++i) {
    const ArgKind k = tensor_kinds[i];
    const Direction d = p.meta_.params[i].direction;
    match = (k == ArgKind::kIn && d == Direction::kIn) ||
            (k == ArgKind::kOut && d == Direction::kOut) ||
            (k == ArgKind::kInOut && d == Direction::kInOut);
  }
  if (!match) {
    std::string dirs = "[";
    for (size_t i = 0; i < p.meta_.params.size(); ++i)
      dirs += (i ? ", " : "") + std::string(direction_name(p.meta_.params[i].direction));
    for (size_t i = 0; i < p.meta_.scalars.size(); ++i)
      dirs += (dirs.size() > 1 ? ", " : "") + std::string("Scalar");
    dirs += "]";
    fail_in(dir, kKernelConfigFile, "orchestrations[" + std::to_string(index) + "].signature",
            "is " + signature_string(orch->signature) + " but " +
                sidecar_display(dir, kCompiledMetaFile) + " gives program '" + p.meta_.program +
                "' the parameters " + dirs + " (" + param_names(p.meta_.params) +
                "); they must agree one to one");
  }

  p.golden_ = GoldenSpec::load_if_present(dir, p.meta_.params);
  if (platform_override) {
    check_platform_override(*platform_override, p.meta_.arch);
    p.platform_ = *platform_override;
  } else {
    p.platform_ = p.meta_.platform;
  }
  return p;
}

CompiledProgram CompiledProgram::from_sub_build(const fs::path& dir, const std::string& program,
                                                std::vector<ParamInfo> params,
                                                const std::string& platform,
                                                const std::string& arch) {
  return from_sub_build(dir, KernelConfig::load(dir), program, std::move(params), platform, arch);
}

CompiledProgram CompiledProgram::from_sub_build(const fs::path& dir, KernelConfig config,
                                                const std::string& program,
                                                std::vector<ParamInfo> params,
                                                const std::string& platform,
                                                const std::string& arch) {
  CompiledProgram p;
  p.dir_ = dir;
  p.config_ = std::move(config);
  const OrchestrationInfo* orch = p.config_.find_orchestration(program);
  if (!orch)
    fail_in(dir, kKernelConfigFile, "orchestrations",
            "has no orchestration '" + program + "' (it has: " + p.config_.orchestration_names() +
                ")");
  std::vector<ArgKind> tensor_kinds;
  for (ArgKind kind : orch->signature)
    if (is_tensor_kind(kind)) tensor_kinds.push_back(kind);
  bool match = tensor_kinds.size() == params.size();
  for (size_t i = 0; match && i < params.size(); ++i)
    match = direction_name(params[i].direction) == std::string(arg_kind_name(tensor_kinds[i]));
  if (!match) {
    std::string dirs;
    for (const ParamInfo& param : params)
      dirs += (dirs.empty() ? "" : ", ") + std::string(direction_name(param.direction));
    fail_in(dir, kKernelConfigFile,
            "orchestrations[" + std::to_string(orch - p.config_.orchestrations.data()) +
                "].signature",
            "is " + signature_string(orch->signature) + " but the dispatch passes the tensors [" +
                dirs + "]; they must agree one to one");
  }
  p.meta_.program = program;
  p.meta_.params = std::move(params);
  p.meta_.platform = platform;
  p.meta_.arch = arch;
  p.platform_ = platform;
  return p;
}

const OrchestrationInfo& CompiledProgram::orchestration() const {
  // from_dir guarantees it exists.
  return *config_.find_orchestration(meta_.program);
}

CompiledProgram CompiledProgram::with_platform(const std::string& platform) const {
  check_platform_override(platform, meta_.arch);
  CompiledProgram copy = *this;
  copy.platform_ = platform;
  return copy;
}

}  // namespace pypto
