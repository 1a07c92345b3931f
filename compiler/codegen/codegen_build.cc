#include "compiler/codegen/codegen_build.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <system_error>
#include <utility>

#include "artifact/build_paths.h"
#include "artifact/compiled_meta.h"
#include "artifact/distributed_meta.h"
#include "artifact/host_orch.h"
#include "artifact/kernel_config.h"
#include "common/fs_util.h"
#include "common/version.h"
#include "compiler/codegen/codegen_host_plan.h"
#include "compiler/codegen/codegen_kernel.h"
#include "compiler/codegen/codegen_orchestration.h"
#include "compiler/codegen/codegen_util.h"
#include "compiler/codegen/codegen_windows.h"
#include "pypto/error.h"
#include "pypto/golden_spec.h"
#include "pypto/npy.h"
#include "pypto/run_config.h"

namespace pypto::compiler {

const char* const kDebugRunScript =
    "#!/bin/sh\n"
    "# Re-runner of this build directory: replays it with pypto-coord (docs/cache-and-replay.md).\n"
    "# Extra arguments (--validate, --pmu 2, --swimlane, ...) pass through.\n"
    "# Resolved relative to this script, so the directory can be moved or copied.\n"
    "exec pypto-coord replay \"$(dirname \"$0\")/..\" \"$@\"\n";

namespace {

constexpr const char* kOrchestrationEntry = "orchestration_entry";
constexpr int64_t kAicpuThreadNum = 1;

// One chip's sources and kernel_config.json, relative to the (sub-)build.
struct ChipFiles {
  KernelConfig config;
  // path -> content, in write order (a .pto before its .cpp).
  std::vector<std::pair<std::string, std::string>> files;
  // Per orchestration: the window parameters of its kernels (check_window_names).
  std::map<std::string, std::vector<KernelWindowUse>> uses_by_chip;
};

ChipFiles generate_chip(const std::vector<const Function*>& chips, const FunctionTable& table,
                        const BuildRequest& request, const KernelLowerer& lower) {
  ChipFiles out;
  out.config.runtime = std::string(kChipRuntime);
  out.config.aicpu_thread_num = kAicpuThreadNum;
  // Kernels: every kernel the orchestrations submit, func_ids in order of first call.
  std::vector<const Function*> kernels;
  for (const Function* chip : chips)
    for (const Function* k : kernels_called(*chip, table))
      if (std::find(kernels.begin(), kernels.end(), k) == kernels.end()) kernels.push_back(k);
  OrchestrationOptions orch_options;
  orch_options.origin = request.origin;
  orch_options.sources = request.sources;
  for (size_t i = 0; i < kernels.size(); ++i)
    orch_options.func_ids[kernels[i]->name] = static_cast<int64_t>(i);

  for (const Function* chip : chips) {
    GeneratedOrchestration g = generate_orchestration(*chip, table, orch_options);
    OrchestrationInfo info;
    info.name = chip->name;
    info.source = std::string(kOrchestrationDir) + "/" + chip->name + ".cpp";
    info.function_name = kOrchestrationEntry;
    info.signature = signature_of(*chip);
    out.files.emplace_back(info.source, std::move(g.source));
    out.uses_by_chip[chip->name] = std::move(g.window_uses);
    out.config.orchestrations.push_back(std::move(info));
  }
  for (size_t i = 0; i < kernels.size(); ++i) {
    const Function& k = *kernels[i];
    LoweredKernel lowered = lower(k);
    if (lowered.unit.empty()) lowered.unit = k.name;
    const char* core = k.core == CoreType::kAic ? "aic" : "aiv";
    KernelInfo info;
    info.func_id = static_cast<int64_t>(i);
    info.name = k.name;
    info.core_type = k.core == CoreType::kAic ? pypto::CoreType::kAic : pypto::CoreType::kAiv;
    info.source = std::string(kKernelsDir) + "/" + core + "/" + lowered.unit + ".cpp";
    info.signature = signature_of(k);
    KernelSourceOptions ko;
    ko.func_id = info.func_id;
    ko.origin = request.origin;
    out.files.emplace_back(info.source, generate_kernel_source(k, lowered, ko));
    const std::string ptoas = std::string(kPtoasDir) + "/" + lowered.unit;
    out.files.emplace_back(ptoas + ".pto", lowered.pto);
    out.files.emplace_back(ptoas + ".cpp", ptoas_body(lowered));
    out.config.kernels.push_back(std::move(info));
  }
  return out;
}

// Kernels find their windows by name (compiler/codegen/kernel_lowering.h), so the
// host window bound to a kernel's window parameter must carry that
// parameter's name. specialize_windows made it so; this checks its work
// against the orchestration generator's own resolution of window arguments.
void check_window_names(const HostPlan& plan, const ChipFiles& chip, const BuildRequest& request) {
  for (const PlannedDispatch& d : plan.dispatches) {
    auto uses = chip.uses_by_chip.find(d.chip->name);
    if (uses == chip.uses_by_chip.end()) continue;
    for (const KernelWindowUse& use : uses->second) {
      auto bound = d.windows.find(use.chip_param);
      if (bound == d.windows.end() || bound->second == use.kernel_param) continue;
      codegen_error(request.sources, d.span,
                    "internal error: after window specialization kernel '" + use.kernel->name +
                        "' still finds its window parameter '" + use.kernel_param +
                        "' by name, but this dispatch binds it to the window buffer '" +
                        bound->second + "'; please report this with the program");
    }
  }
}

void write_chip(const fs::path& dir, const ChipFiles& chip) {
  for (const auto& [path, content] : chip.files) write_file_atomic(dir / path, content);
  chip.config.write(dir);
}

// `golden` holds one tensor per parameter of `entry` (scalars too); `params`
// are its tensor parameters.
void write_golden(const fs::path& dir, const Function& entry, const std::vector<ParamInfo>& params,
                  const GoldenData& golden) {
  GoldenSpec spec;
  std::vector<DType> dtypes;
  std::vector<size_t> index;  // params[k] is entry.params[index[k]]
  for (size_t i = 0; i < entry.params.size(); ++i)
    if (entry.params[i].kind == ParamKind::kTensor) index.push_back(i);
  for (size_t k = 0; k < params.size(); ++k) {
    const ParamInfo& p = params[k];
    const size_t i = index.at(k);
    if (p.is_input()) write_npy(GoldenSpec::input_path(dir, p.name), golden.before.at(i));
    if (p.is_output()) {
      write_npy(GoldenSpec::expected_path(dir, p.name), golden.after.at(i));
      spec.outputs.push_back(p.name);
      dtypes.push_back(p.dtype);
    }
  }
  std::tie(spec.rtol, spec.atol) = golden_tolerance(dtypes);
  spec.seed = static_cast<int64_t>(golden.seed);
  spec.write(dir);
}

}  // namespace

std::vector<ParamInfo> entry_params(const Function& entry, const SourceManager* sources) {
  std::vector<ParamInfo> params;
  (void)sources;
  for (const Param& p : entry.params) {
    if (p.kind == ParamKind::kScalar) continue;  // "scalars"
    if (p.kind != ParamKind::kTensor)
      codegen_error(sources, p.span,
                    "parameter '" + p.name + "' of the entry '" + entry.name +
                        "' is a window; windows are created with window_buffer, never passed "
                        "to the entry");
    ParamInfo info;
    info.name = p.name;
    info.direction = p.dir == Direction::kIn    ? pypto::Direction::kIn
                     : p.dir == Direction::kOut ? pypto::Direction::kOut
                                                : pypto::Direction::kInOut;
    info.shape = p.type.shape;
    info.dtype = p.type.dtype;
    params.push_back(std::move(info));
  }
  return params;
}

std::pair<double, double> golden_tolerance(const std::vector<DType>& output_dtypes) {
  double tol = 0;
  for (DType d : output_dtypes) {
    switch (d) {
      case DType::kF32:
        tol = std::max(tol, 1e-5);
        break;
      case DType::kF16:
        tol = std::max(tol, 5e-3);
        break;
      case DType::kBF16:
        tol = std::max(tol, 3e-2);
        break;
      default:
        break;
    }
  }
  return {tol, tol};
}

BuildSummary write_build(const fs::path& dir, const BuildRequest& request,
                         const KernelLowerer& lower, const std::optional<GoldenData>& golden) {
  const Function& entry = *request.entry;
  FunctionTable table(*request.program);
  std::deque<Function> specialized;  // window specializations (codegen_windows.h)
  const Platform platform = parse_platform(request.platform);
  BuildSummary summary;
  summary.kind = request.distributed ? BuildKind::kL3 : BuildKind::kL2;

  ProgramMeta meta;
  meta.program = entry.name;
  meta.params = entry_params(entry, request.sources);
  {
    size_t k = 0;
    for (const Param& p : entry.params) {
      if (p.kind != ParamKind::kScalar) continue;
      ScalarParam s;
      s.name = p.name;
      s.value = k < request.scalars.size() ? request.scalars[k] : ScalarValue{};
      if (s.value.dtype != p.dtype) s.value = s.value.converted_to(p.dtype);
      meta.scalars.push_back(std::move(s));
      ++k;
    }
  }
  meta.num_return_types = 0;
  meta.platform = request.platform;
  meta.arch = arch_name(platform.arch);
  meta.compiler_version = std::string("pypto-compile ") + release_version();

  // ---- generate everything in memory
  std::optional<HostPlan> plan;
  ChipFiles chip;
  if (request.distributed) {
    plan = plan_host(entry, table, request.world, request.sources);
    if (plan->orch.dispatches.empty())
      codegen_error(request.sources, entry.name_span,
                    "host function '" + entry.name + "' dispatches nothing (no `f(...) on r`)");
    specialize_windows(*plan, table, specialized, request.sources);
    chip = generate_chip(plan->chips, table, request, lower);
    check_window_names(*plan, chip, request);
    summary.dispatches = plan->orch.dispatches.size();
  } else {
    chip = generate_chip({&entry}, table, request, lower);
  }
  summary.kernels = chip.config.kernels.size();
  bool has_outputs = false;
  for (const ParamInfo& p : meta.params) has_outputs = has_outputs || p.is_output();
  summary.golden = golden.has_value() && has_outputs;

  // ---- write: the other kind's markers go first, this kind's markers last
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw InfraError("cannot create the build directory " + dir.string() + ": " + ec.message());
  remove_markers_of_other_kind(dir, summary.kind);
  if (request.distributed) {
    for (int64_t r = 0; r < request.world; ++r) write_chip(next_level_dir(dir, r), chip);
    plan->orch.write(dir);
    DistributedMeta dm;
    static_cast<ProgramMeta&>(dm) = meta;
    dm.world_size = request.world;
    dm.distributed_config.device_ids = request.device_ids;
    if (dm.distributed_config.device_ids.empty())
      for (int64_t r = 0; r < request.world; ++r) dm.distributed_config.device_ids.push_back(r);
    dm.distributed_config.runtime = std::string(kChipRuntime);
    dm.distributed_config.aicpu_thread_num = kAicpuThreadNum;
    dm.distributed_config.num_sub_workers = 0;
    dm.write(dir);
  } else {
    write_chip(dir, chip);
    CompiledMeta cm;
    static_cast<ProgramMeta&>(cm) = meta;
    cm.write(dir);
  }
  fs::remove_all(dir / kGoldenDir, ec);
  if (summary.golden) write_golden(dir, entry, meta.params, *golden);
  write_file_atomic(dir / kDebugRunner, kDebugRunScript,
                    fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                        fs::perms::others_read | fs::perms::others_exec);
  return summary;
}

}  // namespace pypto::compiler
