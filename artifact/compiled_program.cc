#include "pypto/compiled_program.h"

#include <system_error>

#include "artifact/build_paths.h"
#include "artifact/compiled_meta.h"
#include "artifact/kernel_config.h"
#include "artifact/sidecar_checks.h"
#include "pypto/error.h"

namespace pypto {

struct CompiledProgram::Contents {
  CompiledMeta meta;
  KernelConfig config;
  std::optional<GoldenSpec> golden;
};

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
  auto contents = std::make_shared<Contents>();
  Contents& c = *contents;
  c.meta = CompiledMeta::load(dir);
  c.config = KernelConfig::load(dir);
  reject_windows(dir, c.config.orchestrations, "orchestrations");
  reject_windows(dir, c.config.kernels, "kernels");

  const OrchestrationInfo* orch = c.config.find_orchestration(c.meta.program);
  if (!orch)
    fail_in(dir, kCompiledMetaFile, "program",
            "names '" + c.meta.program + "', which is not an orchestration of " +
                sidecar_display(dir, kKernelConfigFile) +
                " (it has: " + c.config.orchestration_names() + ")");
  // The orchestration receives the program's tensor parameters in order, and
  // its scalar parameters (kernel ABI: tensors and scalars are separate arrays).
  size_t index = static_cast<size_t>(orch - c.config.orchestrations.data());
  std::vector<ArgKind> tensor_kinds;
  size_t scalar_count = 0;
  for (ArgKind k : orch->signature) {
    if (k == ArgKind::kScalar)
      ++scalar_count;
    else
      tensor_kinds.push_back(k);
  }
  bool match = tensor_kinds.size() == c.meta.params.size() &&
               scalar_count == c.meta.scalars.size();
  for (size_t i = 0; match && i < tensor_kinds.size(); ++i) {
    const ArgKind k = tensor_kinds[i];
    const Direction d = c.meta.params[i].direction;
    match = (k == ArgKind::kIn && d == Direction::kIn) ||
            (k == ArgKind::kOut && d == Direction::kOut) ||
            (k == ArgKind::kInOut && d == Direction::kInOut);
  }
  if (!match) {
    std::string dirs = "[";
    for (size_t i = 0; i < c.meta.params.size(); ++i)
      dirs += (i ? ", " : "") + std::string(direction_name(c.meta.params[i].direction));
    for (size_t i = 0; i < c.meta.scalars.size(); ++i)
      dirs += (dirs.size() > 1 ? ", " : "") + std::string("Scalar");
    dirs += "]";
    fail_in(dir, kKernelConfigFile, "orchestrations[" + std::to_string(index) + "].signature",
            "is " + signature_string(orch->signature) + " but " +
                sidecar_display(dir, kCompiledMetaFile) + " gives program '" + c.meta.program +
                "' the parameters " + dirs + " (" + param_names(c.meta.params) +
                "); they must agree one to one");
  }

  c.golden = GoldenSpec::load_if_present(dir, c.meta.params);
  if (platform_override) {
    check_platform_override(*platform_override, c.meta.arch);
    p.platform_ = *platform_override;
  } else {
    p.platform_ = c.meta.platform;
  }
  p.contents_ = std::move(contents);
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
  auto contents = std::make_shared<Contents>();
  Contents& c = *contents;
  c.config = std::move(config);
  const OrchestrationInfo* orch = c.config.find_orchestration(program);
  if (!orch)
    fail_in(dir, kKernelConfigFile, "orchestrations",
            "has no orchestration '" + program + "' (it has: " + c.config.orchestration_names() +
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
            "orchestrations[" + std::to_string(orch - c.config.orchestrations.data()) +
                "].signature",
            "is " + signature_string(orch->signature) + " but the dispatch passes the tensors [" +
                dirs + "]; they must agree one to one");
  }
  c.meta.program = program;
  c.meta.params = std::move(params);
  c.meta.platform = platform;
  c.meta.arch = arch;
  p.platform_ = platform;
  p.contents_ = std::move(contents);
  return p;
}

const OrchestrationInfo& CompiledProgram::orchestration() const {
  // from_dir guarantees it exists.
  return *contents_->config.find_orchestration(contents_->meta.program);
}

const CompiledMeta& CompiledProgram::meta() const { return contents_->meta; }
const KernelConfig& CompiledProgram::kernel_config() const { return contents_->config; }
const std::optional<GoldenSpec>& CompiledProgram::golden() const { return contents_->golden; }
const std::string& CompiledProgram::name() const { return contents_->meta.program; }
const std::vector<ParamInfo>& CompiledProgram::params() const { return contents_->meta.params; }
const std::vector<ScalarParam>& CompiledProgram::scalars() const {
  return contents_->meta.scalars;
}
const std::string& CompiledProgram::recorded_platform() const { return contents_->meta.platform; }
const std::string& CompiledProgram::arch() const { return contents_->meta.arch; }

CompiledProgram CompiledProgram::with_platform(const std::string& platform) const {
  check_platform_override(platform, arch());
  CompiledProgram copy = *this;
  copy.platform_ = platform;
  return copy;
}

}  // namespace pypto
