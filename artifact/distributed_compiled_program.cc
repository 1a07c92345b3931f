#include "pypto/distributed_compiled_program.h"

#include <set>
#include <system_error>

#include "artifact/build_paths.h"
#include "artifact/chip_build.h"
#include "artifact/distributed_meta.h"
#include "artifact/host_orch.h"
#include "artifact/kernel_config.h"
#include "pypto/compiled_program.h"
#include "pypto/error.h"
#include "pypto/tensor.h"  // shape_string

namespace pypto {

struct DistributedCompiledProgram::Contents {
  DistributedMeta meta;
  HostOrch host_orch;
  std::vector<ChipBuild> chips;
  std::optional<GoldenSpec> golden;
};

namespace {

// Errors found by comparing host_orch.json with the other files are reported
// on host_orch.json, whose field binds the two.
[[noreturn]] void fail_host_orch(const fs::path& dir, const std::string& field,
                                 const std::string& problem) {
  throw ArtifactError(sidecar_display(dir, kHostOrchFile), field, problem, recompile_remedy(dir));
}

bool binds(ArgKind slot, HostArgKind arg) {
  switch (arg) {
    case HostArgKind::kHost:
      return is_tensor_kind(slot);
    case HostArgKind::kWindow:
      return slot == ArgKind::kWindow;
    case HostArgKind::kScalar:
      return slot == ArgKind::kScalar;
  }
  return false;
}

// A host box must lie inside its parameter; a write slot must target a
// parameter the host copies back (Out/InOut).
void check_host_arg(const fs::path& dir, const std::string& field, const HostArg& arg, ArgKind slot,
                    const std::vector<ParamInfo>& params, const HostOrch& plan) {
  const ParamInfo* p = find_param(params, arg.param);
  if (!p) p = plan.find_intermediate(arg.param);
  if (!p)
    fail_host_orch(dir, field + ".param",
                   "names '" + arg.param + "', which is not a parameter of " +
                       sidecar_display(dir, kDistributedMetaFile) +
                       " (parameters: " + param_names(params) + ") nor an intermediate");
  if (arg.offsets.size() != p->shape.size())
    fail_host_orch(dir, field + ".offsets",
                   "has " + std::to_string(arg.offsets.size()) + " dimensions but parameter '" +
                       p->name + "' is " + p->type_string());
  for (size_t k = 0; k < p->shape.size(); ++k) {
    if (p->shape[k] == kDynamicExtent) continue;  // checked at run time against the tensor
    int64_t end = 0;
    if (__builtin_add_overflow(arg.offsets[k], arg.shape[k], &end) || end > p->shape[k])
      fail_host_orch(dir, field + ".shape",
                     "the box at offsets " + shape_string(arg.offsets) + " with shape " +
                         shape_string(arg.shape) + " leaves parameter '" + p->name + "' (" +
                         p->type_string() + ") in dimension " + std::to_string(k));
  }
  if ((slot == ArgKind::kOut || slot == ArgKind::kInOut) && !p->is_output())
    fail_host_orch(dir, field + ".param",
                   "binds an " + std::string(arg_kind_name(slot)) + " argument to '" + p->name +
                       "', an In parameter; results written there would never reach the host");
  if (!arg.window.empty()) {
    // In place: the box's data occupies the first bytes of the window's local copy.
    const WindowInfo* w = plan.find_window(arg.window);  // parse checked that it exists
    int64_t bytes = static_cast<int64_t>(dtype_size(p->dtype));
    for (int64_t extent : arg.shape)
      if (__builtin_mul_overflow(bytes, extent, &bytes)) bytes = INT64_MAX;
    if (w->dtype != p->dtype)
      fail_host_orch(dir, field + ".window",
                     "places a box of '" + p->name + "' (" + dtype_name(p->dtype) +
                         ") in window '" + w->name + "' of dtype " + dtype_name(w->dtype) +
                         "; an in-place argument needs a window of its own dtype");
    if (bytes > w->bytes)
      fail_host_orch(dir, field + ".window",
                     "places a box of " + std::to_string(bytes) + " bytes (shape " +
                         shape_string(arg.shape) + " of '" + p->name + "') in window '" +
                         w->name + "', which has " + std::to_string(w->bytes) + " bytes");
  }
}

void check_dispatches(const fs::path& dir, const DistributedMeta& meta, const HostOrch& plan,
                      const std::vector<ChipBuild>& chips) {
  for (size_t w = 0; w < plan.windows.size(); ++w)
    for (size_t i = 0; i < plan.windows[w].ranks.size(); ++i)
      if (plan.windows[w].ranks[i] >= meta.world_size)
        fail_host_orch(dir, "windows[" + std::to_string(w) + "].ranks[" + std::to_string(i) + "]",
                       "is " + std::to_string(plan.windows[w].ranks[i]) + " but world_size is " +
                           std::to_string(meta.world_size) + " (ranks 0.." +
                           std::to_string(meta.world_size - 1) + ")");
  for (size_t t = 0; t < plan.intermediates.size(); ++t)
    if (find_param(meta.params, plan.intermediates[t].name))
      fail_host_orch(dir, "intermediates[" + std::to_string(t) + "].name",
                     "is '" + plan.intermediates[t].name + "', which is also a parameter of " +
                         sidecar_display(dir, kDistributedMetaFile) +
                         "; a dispatch argument could not say which it means");
  for (size_t d = 0; d < plan.dispatches.size(); ++d) {
    const Dispatch& dispatch = plan.dispatches[d];
    const std::string where = "dispatches[" + std::to_string(d) + "]";
    if (dispatch.rank >= meta.world_size)
      fail_host_orch(dir, where + ".rank",
                     "is " + std::to_string(dispatch.rank) + " but world_size is " +
                         std::to_string(meta.world_size) + " (ranks 0.." +
                         std::to_string(meta.world_size - 1) + ")");
    const ChipBuild& chip = chips[static_cast<size_t>(dispatch.rank)];
    const OrchestrationInfo* orch = chip.config.find_orchestration(dispatch.program);
    if (!orch)
      fail_host_orch(dir, where + ".program",
                     "names '" + dispatch.program + "', which is not an orchestration of " +
                         sidecar_display(chip.dir, kKernelConfigFile) +
                         " (it has: " + chip.config.orchestration_names() + ")");
    const std::string sig = signature_string(orch->signature);
    if (dispatch.args.size() != orch->signature.size())
      fail_host_orch(dir, where + ".args",
                     "has " + std::to_string(dispatch.args.size()) + " arguments but '" +
                         orch->name + "' in " + sidecar_display(chip.dir, kKernelConfigFile) +
                         " has the signature " + sig + " (" +
                         std::to_string(orch->signature.size()) + " arguments)");
    std::set<std::string> placed;  // windows holding an in-place argument of this dispatch
    for (size_t a = 0; a < dispatch.args.size(); ++a) {
      const HostArg& arg = dispatch.args[a];
      const ArgKind slot = orch->signature[a];
      const std::string field = where + ".args[" + std::to_string(a) + "]";
      if (!binds(slot, arg.kind))
        fail_host_orch(dir, field + ".kind",
                       "is " + std::string(host_arg_kind_name(arg.kind)) + " but argument " +
                           std::to_string(a) + " of '" + orch->name + "' " + sig + " is " +
                           arg_kind_name(slot) + " (In/Out/InOut bind host, Window binds " +
                           "window, Scalar binds scalar)");
      if (arg.kind == HostArgKind::kHost)
        check_host_arg(dir, field, arg, slot, meta.params, plan);
      if (arg.kind == HostArgKind::kHost && !arg.window.empty() &&
          !placed.insert(arg.window).second)
        fail_host_orch(dir, field + ".window",
                       "places a second argument of the dispatch in window '" + arg.window +
                           "'; each window holds at most one in-place argument of a dispatch");
      if (arg.kind == HostArgKind::kScalar && !arg.param.empty() &&
          !find_scalar(meta.scalars, arg.param)) {
        std::string names;
        for (const ScalarParam& sp : meta.scalars) names += (names.empty() ? "" : ", ") + sp.name;
        fail_host_orch(dir, field + ".param",
                       "names '" + arg.param + "', which is not a scalar parameter of " +
                           sidecar_display(dir, kDistributedMetaFile) + " (scalars: " +
                           (names.empty() ? std::string("none") : names) + ")");
      }
      if (arg.kind == HostArgKind::kScalar && !arg.param.empty() &&
          find_scalar(meta.scalars, arg.param)->value.is_float() && !is_floating_dtype(arg.dtype))
        fail_host_orch(dir, field + ".dtype",
                       "is " + std::string(dtype_name(arg.dtype)) + " but scalar parameter '" +
                           arg.param + "' is a float; an integer argument takes integers only");
    }
  }
}

}  // namespace

void check_device_ids_override(const std::vector<int64_t>& device_ids, int64_t world_size) {
  if (static_cast<int64_t>(device_ids.size()) != world_size)
    throw UsageError("--device-ids gives " + std::to_string(device_ids.size()) +
                     " device ids but the build's world_size is " + std::to_string(world_size) +
                     "; give one distinct id >= 0 per rank");
  std::set<int64_t> seen;
  for (int64_t id : device_ids) {
    if (id < 0)
      throw UsageError("--device-ids contains " + std::to_string(id) + "; device ids are >= 0");
    if (!seen.insert(id).second)
      throw UsageError("--device-ids lists device " + std::to_string(id) +
                       " twice; every rank needs its own device");
  }
}

DistributedCompiledProgram DistributedCompiledProgram::from_dir(
    const fs::path& dir, const DistributedOverrides& overrides) {
  BuildKind kind = detect_build_kind(dir);
  if (kind != BuildKind::kL3)
    throw InfraError(dir.generic_string() + " is an L2 (single-chip) build directory (" +
                     std::string(kCompiledMetaFile) + ", " + std::string(kKernelConfigFile) +
                     "), not an L3 one; load it with CompiledProgram::from_dir — " +
                     "pypto-coord run/replay/exec detect the kind themselves");
  DistributedCompiledProgram p;
  p.dir_ = dir;
  auto contents = std::make_shared<Contents>();
  Contents& c = *contents;
  c.meta = DistributedMeta::load(dir);
  c.host_orch = HostOrch::load(dir);
  // A symlinked next_levels/ or next_levels/<r> pointing out of the build
  // would be shipped to the agents as if it were part of it; refuse it.
  std::error_code canon_ec;
  const fs::path build_root = fs::weakly_canonical(dir, canon_ec);
  const auto refuse_link_out_of_build = [&](const fs::path& link) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(link, ec))) return;
    const fs::path target = fs::weakly_canonical(link, ec);
    const auto rel = target.lexically_relative(build_root);
    if (ec || canon_ec || rel.empty() || *rel.begin() == "..")
      throw ArtifactError(link.lexically_normal().generic_string(), "",
                          "is a symbolic link to " + target.generic_string() +
                              ", outside the build directory " + build_root.generic_string() +
                              "; a build must contain its own sub-builds",
                          "Replace the link with a copy of the sub-build, or r" +
                              recompile_remedy(dir).substr(1));  // "...or rewrite it by..."
  };
  refuse_link_out_of_build(dir / fs::path(kNextLevelsDir));
  // Every rank's sub-build must be there; a missing one is reported as its
  // missing kernel_config.json.
  for (int64_t r = 0; r < c.meta.world_size; ++r) {
    fs::path sub = next_level_dir(dir, r);
    refuse_link_out_of_build(sub);
    std::error_code ec;
    if (!fs::exists(sub / fs::path(kKernelConfigFile), ec))
      throw ArtifactError(sidecar_display(sub, kKernelConfigFile), "",
                          "is missing; world_size is " + std::to_string(c.meta.world_size) +
                              ", so every rank 0.." + std::to_string(c.meta.world_size - 1) +
                              " needs its sub-build in next_levels/<r>/",
                          recompile_remedy(dir));
    c.chips.push_back(ChipBuild{sub, KernelConfig::load(sub)});
  }
  check_dispatches(dir, c.meta, c.host_orch, c.chips);
  c.golden = GoldenSpec::load_if_present(dir, c.meta.params);

  if (overrides.platform) {
    check_platform_override(*overrides.platform, c.meta.arch);
    p.platform_ = *overrides.platform;
  } else {
    p.platform_ = c.meta.platform;
  }
  if (overrides.device_ids) {
    check_device_ids_override(*overrides.device_ids, c.meta.world_size);
    p.device_ids_ = *overrides.device_ids;
  } else {
    p.device_ids_ = c.meta.distributed_config.device_ids;
  }
  p.contents_ = std::move(contents);
  return p;
}

std::vector<const Dispatch*> DistributedCompiledProgram::dispatches_of(int64_t rank) const {
  std::vector<const Dispatch*> out;
  const HostOrch& plan = contents_->host_orch;
  for (size_t i : plan.dispatches_of(rank)) out.push_back(&plan.dispatches[i]);
  return out;
}

const DistributedMeta& DistributedCompiledProgram::meta() const { return contents_->meta; }
const HostOrch& DistributedCompiledProgram::host_orch() const { return contents_->host_orch; }
const std::optional<GoldenSpec>& DistributedCompiledProgram::golden() const {
  return contents_->golden;
}
const std::string& DistributedCompiledProgram::name() const { return contents_->meta.program; }
const std::vector<ParamInfo>& DistributedCompiledProgram::params() const {
  return contents_->meta.params;
}
const std::vector<ScalarParam>& DistributedCompiledProgram::scalars() const {
  return contents_->meta.scalars;
}
int64_t DistributedCompiledProgram::world_size() const { return contents_->meta.world_size; }
const std::string& DistributedCompiledProgram::recorded_platform() const {
  return contents_->meta.platform;
}
const std::string& DistributedCompiledProgram::arch() const { return contents_->meta.arch; }
const std::vector<ChipBuild>& DistributedCompiledProgram::chips() const {
  return contents_->chips;
}
const ChipBuild& DistributedCompiledProgram::chip(int64_t rank) const {
  return contents_->chips.at(static_cast<size_t>(rank));
}

}  // namespace pypto
