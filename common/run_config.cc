#include "pypto/run_config.h"

#include <charconv>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <type_traits>

#include "pypto/error.h"

namespace pypto {
namespace {

// ---------------------------------------------------------------------------------------------
// Platform spellings.

struct PlatformEntry {
  std::string_view name;
  Platform platform;
};

constexpr PlatformEntry kPlatforms[] = {
    {"a2a3sim", {Arch::kA2A3, ExecutionMode::kSim}},
    {"a2a3", {Arch::kA2A3, ExecutionMode::kOnboard}},
    {"a5sim", {Arch::kA5, ExecutionMode::kSim}},
    {"a5", {Arch::kA5, ExecutionMode::kOnboard}},
};

template <typename Range>
std::string join(const Range& items, std::string_view separator = ", ") {
  std::ostringstream out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out << separator;
    out << item;
    first = false;
  }
  return out.str();
}

// ---------------------------------------------------------------------------------------------
// Ring rules: PyPTO's RunConfig checks (docs "Sizing the rings", test_runner.py), which are
// the runtime's RuntimeEnv::validate() constraints, checked before dispatch for a clear error.

constexpr uint64_t kInt32Max = static_cast<uint64_t>(std::numeric_limits<int32_t>::max());

struct RingSpec {
  const char* field;
  const char* env_var;
  uint64_t min;
  uint64_t max;
  bool power_of_two;
  const char* rule;
};

const RingSpec& spec(RingKind kind) {
  static const RingSpec kSpecs[] = {
      {"ring_task_window", "PTO2_RING_TASK_WINDOW", 4, kInt32Max, true,
       "a power of 2 in [4, INT32_MAX] (task slots per ring)"},
      {"ring_heap", "PTO2_RING_HEAP", 1024, std::numeric_limits<uint64_t>::max(), true,
       "a power of 2 >= 1024 (bytes per ring)"},
      {"ring_dep_pool", "PTO2_RING_DEP_POOL", 4, kInt32Max, false,
       "an integer in [4, INT32_MAX] (dependency entries per ring)"},
  };
  return kSpecs[static_cast<int>(kind)];
}

bool satisfies(const RingSpec& rule, uint64_t value) {
  if (value < rule.min || value > rule.max) return false;
  return !rule.power_of_two || (value & (value - 1)) == 0;
}

std::string_view trim(std::string_view text) {
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

// Resolves one kind: per level, the explicit value, else the env var, else the default.
std::array<RingValue, kRingLevels> resolve_one(RingKind kind, const RingOverride& explicit_value,
                                               const EnvLookup& env) {
  validate_ring_override(kind, explicit_value, ring_field_name(kind));
  const auto from_config = explicit_value.expanded();
  std::array<RingValue, kRingLevels> result{};
  std::optional<std::array<uint64_t, kRingLevels>> from_env;
  for (int level = 0; level < kRingLevels; ++level) {
    if (from_config[level] != 0) {
      result[level] = {from_config[level], RingSource::kConfig};
      continue;
    }
    // The env var is read (and validated) only when some level falls through to it.
    if (!from_env) {
      const std::optional<std::string> text = env ? env(ring_env_var(kind)) : std::nullopt;
      from_env = parse_ring_override(kind, text.value_or(""), ring_env_var(kind)).expanded();
    }
    if ((*from_env)[level] != 0) result[level] = {(*from_env)[level], RingSource::kEnv};
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// The compile-kwargs mapping: unset optionals are left out, not written as null.

// Numbers and switches are always present. A template, so a new int field is not silently
// narrowed to bool by overload resolution.
template <typename T>
requires std::is_arithmetic_v<T>
void put_kwarg(nlohmann::json& kwargs, const char* key, T value) { kwargs[key] = value; }
void put_kwarg(nlohmann::json& kwargs, const char* key, const std::string& value) {
  if (!value.empty()) kwargs[key] = value;
}
void put_kwarg(nlohmann::json& kwargs, const char* key, const std::vector<std::string>& value) {
  kwargs[key] = value;
}
void put_kwarg(nlohmann::json& kwargs, const char* key,
               const std::optional<DistributedConfig>& value) {
  if (value) kwargs[key] = *value;
}

// Fills one view member from a RunConfig field only when the field's owner is the view;
// for any other owner the copy is never instantiated, so rows of other views compile away.
template <FieldOwner kFieldOwner, FieldOwner kViewOwner, typename View, typename Copy>
void copy_if_owned(View& view, const Copy& copy) {
  if constexpr (kFieldOwner == kViewOwner) copy(view);
}

void check_range(const char* field, int64_t value, int64_t low, int64_t high,
                 const char* meaning) {
  if (value < low || value > high) {
    throw UsageError("invalid " + std::string(field) + "=" + std::to_string(value) +
                     ": must be in [" + std::to_string(low) + ", " + std::to_string(high) + "] (" +
                     meaning + ")");
  }
}

void check_non_negative(const std::string& field, double value) {
  if (!(value >= 0)) {
    std::ostringstream message;
    message << "invalid " << field << "=" << value << ": must be >= 0";
    throw UsageError(message.str());
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Platform.

std::string Platform::name() const { return platform_name(arch, mode); }

std::optional<Platform> try_parse_platform(std::string_view name) {
  for (const PlatformEntry& entry : kPlatforms) {
    if (entry.name == name) return entry.platform;
  }
  return std::nullopt;
}

Platform parse_platform(std::string_view name) {
  if (auto platform = try_parse_platform(name)) return *platform;
  throw UsageError("unknown platform '" + std::string(name) +
                   "'; valid platforms: " + join(kPlatformNames));
}

std::string platform_name(Arch arch, ExecutionMode mode) {
  std::string name = arch_name(arch);
  if (mode == ExecutionMode::kSim) name += "sim";
  return name;
}

const char* arch_name(Arch arch) { return arch == Arch::kA2A3 ? "a2a3" : "a5"; }

const char* backend_type_name(Arch arch) {
  return arch == Arch::kA2A3 ? "Ascend910B" : "Ascend950";
}

const char* execution_mode_name(ExecutionMode mode) {
  return mode == ExecutionMode::kSim ? "sim" : "onboard";
}

Arch arch_from_name(std::string_view name) {
  if (name == "a2a3") return Arch::kA2A3;
  if (name == "a5") return Arch::kA5;
  throw UsageError("unknown arch '" + std::string(name) + "'; valid archs: a2a3, a5");
}

void require_executable_here(const Platform& platform) {
  if (platform.is_sim()) return;
  throw InfraError("platform '" + platform.name() + "' executes on an " +
                   backend_type_name(platform.arch) +
                   " device, which this build cannot drive; only the simulated platforms "
                   "execute here: use '" +
                   platform_name(platform.arch, ExecutionMode::kSim) + "' instead");
}

// ---------------------------------------------------------------------------------------------
// Ring sizes.

std::array<uint64_t, kRingLevels> RingOverride::expanded() const {
  std::array<uint64_t, kRingLevels> levels{};
  if (values.size() == 1) {
    levels.fill(values[0]);
  } else if (values.size() == static_cast<size_t>(kRingLevels)) {
    for (int level = 0; level < kRingLevels; ++level) levels[level] = values[level];
  }
  return levels;
}

const char* ring_field_name(RingKind kind) { return spec(kind).field; }
const char* ring_env_var(RingKind kind) { return spec(kind).env_var; }
const char* ring_rule(RingKind kind) { return spec(kind).rule; }

void validate_ring_override(RingKind kind, const RingOverride& value, std::string_view origin) {
  const RingSpec& rule = spec(kind);
  const std::string where(origin);
  if (value.values.empty()) return;
  if (value.values.size() == 1) {
    // A scalar 0 is rejected, as in PyPTO: "unset" is spelt by leaving the override out.
    if (!satisfies(rule, value.values[0])) {
      throw UsageError("invalid " + where + "=" + std::to_string(value.values[0]) + ": must be " +
                       rule.rule);
    }
    return;
  }
  if (value.values.size() != static_cast<size_t>(kRingLevels)) {
    throw UsageError("invalid " + where + "=[" + join(value.values) +
                     "]: " + std::to_string(value.values.size()) +
                     " values given; must be one scalar (applied to all 4 ring levels) or "
                     "exactly 4 entries, one per ring level");
  }
  for (int level = 0; level < kRingLevels; ++level) {
    const uint64_t entry = value.values[level];
    if (entry != 0 && !satisfies(rule, entry)) {
      throw UsageError("invalid " + where + "[" + std::to_string(level) +
                       "]=" + std::to_string(entry) + ": entries must be " + rule.rule +
                       ", or 0 to leave that ring level at its default");
    }
  }
}

RingOverride parse_ring_override(RingKind kind, std::string_view text, std::string_view origin) {
  RingOverride result;
  const std::string_view whole = trim(text);
  if (whole.empty()) return result;  // VAR= in a shell means "no override"
  std::string_view rest = whole;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view piece = trim(rest.substr(0, comma));
    uint64_t value = 0;
    const auto [end, error] = std::from_chars(piece.data(), piece.data() + piece.size(), value);
    if (piece.empty() || error != std::errc() || end != piece.data() + piece.size()) {
      const char* problem = error == std::errc::result_out_of_range ? "is out of range"
                                                                    : "is not an unsigned integer";
      throw UsageError("invalid " + std::string(origin) + "='" + std::string(whole) + "': '" +
                       std::string(piece) + "' " + problem +
                       "; expected N or 4 comma-separated values a,b,c,d, each " + spec(kind).rule);
    }
    result.values.push_back(value);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  validate_ring_override(kind, result, origin);
  return result;
}

const char* ring_source_name(RingSource source) {
  switch (source) {
    case RingSource::kConfig:
      return "config";
    case RingSource::kEnv:
      return "env";
    case RingSource::kDefault:
      break;
  }
  return "default";
}

const std::array<RingValue, kRingLevels>& RingSizes::of(RingKind kind) const {
  switch (kind) {
    case RingKind::kTaskWindow:
      return task_window;
    case RingKind::kHeap:
      return heap;
    case RingKind::kDepPool:
      break;
  }
  return dep_pool;
}

bool RingSizes::any_override() const {
  for (RingKind kind : {RingKind::kTaskWindow, RingKind::kHeap, RingKind::kDepPool}) {
    for (const RingValue& value : of(kind)) {
      if (value.source != RingSource::kDefault) return true;
    }
  }
  return false;
}

std::string RingSizes::describe() const {
  std::ostringstream out;
  const std::pair<const char*, RingKind> kinds[] = {{"task_window", RingKind::kTaskWindow},
                                                    {"heap", RingKind::kHeap},
                                                    {"dep_pool", RingKind::kDepPool}};
  bool first_kind = true;
  for (const auto& [label, kind] : kinds) {
    if (!first_kind) out << ' ';
    first_kind = false;
    out << label << "=[";
    for (int level = 0; level < kRingLevels; ++level) {
      const RingValue& value = of(kind)[level];
      if (level != 0) out << ", ";
      if (value.source == RingSource::kDefault) {
        out << "default";
      } else {
        out << value.value << '(' << ring_source_name(value.source) << ')';
      }
    }
    out << ']';
  }
  return out.str();
}

EnvLookup process_env() {
  return [](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

RingSizes resolve_ring_sizes(const RingOverride& task_window, const RingOverride& heap,
                             const RingOverride& dep_pool, const EnvLookup& env) {
  RingSizes sizes;
  sizes.task_window = resolve_one(RingKind::kTaskWindow, task_window, env);
  sizes.heap = resolve_one(RingKind::kHeap, heap, env);
  sizes.dep_pool = resolve_one(RingKind::kDepPool, dep_pool, env);
  return sizes;
}

void to_json(nlohmann::json& j, const RingOverride& value) {
  if (value.values.empty()) {
    j = nullptr;
  } else if (value.values.size() == 1) {
    j = value.values[0];
  } else {
    j = value.values;
  }
}

void to_json(nlohmann::json& j, const DistributedConfig& value) {
  j = nlohmann::json{{"device_ids", value.device_ids},
                     {"runtime", value.runtime},
                     {"aicpu_thread_num", value.aicpu_thread_num},
                     {"num_sub_workers", value.num_sub_workers}};
}

// ---------------------------------------------------------------------------------------------
// Views.

bool DfxOptions::any() const {
  return enable_chip_swimlane != 0 || enable_dump_args != 0 || enable_pmu != 0 || enable_dep_gen ||
         enable_scope_stats;
}

void DfxOptions::validate() const {
  check_range("enable_chip_swimlane", enable_chip_swimlane, 0, 4,
              "swimlane collection level, 0 = off");
  check_range("enable_dump_args", enable_dump_args, 0, 2, "0 off, 1 partial, 2 full");
  check_range("enable_pmu", enable_pmu, 0, std::numeric_limits<int>::max(),
              "PMU event set, 0 = off");
}

std::span<const std::string_view> DfxOptions::fields() {
#define PYPTO_X(type, name, init) #name,
  static constexpr std::string_view kNames[] = {PYPTO_DFX_OPTIONS_FIELDS(PYPTO_X)};
#undef PYPTO_X
  return kNames;
}

nlohmann::json CompileOptions::as_compile_kwargs() const {
  parse_platform(platform);  // an unknown target never reaches the compiler
  nlohmann::json kwargs = nlohmann::json::object();
#define PYPTO_X(type, name, init) put_kwarg(kwargs, #name, name);
  PYPTO_COMPILE_OPTIONS_FIELDS(PYPTO_X)
#undef PYPTO_X
  return kwargs;
}

std::span<const std::string_view> CompileOptions::fields() {
#define PYPTO_X(type, name, init) #name,
  static constexpr std::string_view kNames[] = {PYPTO_COMPILE_OPTIONS_FIELDS(PYPTO_X)};
#undef PYPTO_X
  return kNames;
}

RingSizes RunOptions::resolved_ring_sizes(const EnvLookup& env) const {
  return resolve_ring_sizes(ring_task_window, ring_heap, ring_dep_pool, env);
}

std::span<const std::string_view> RunOptions::fields() {
#define PYPTO_X(type, name, init) #name,
  static constexpr std::string_view kNames[] = {PYPTO_RUN_OPTIONS_FIELDS(PYPTO_X)};
#undef PYPTO_X
  return kNames;
}

void to_json(nlohmann::json& j, const DfxOptions& value) {
  j = nlohmann::json::object();
#define PYPTO_X(type, name, init) j[#name] = value.name;
  PYPTO_DFX_OPTIONS_FIELDS(PYPTO_X)
#undef PYPTO_X
}

void to_json(nlohmann::json& j, const RunOptions& value) {
  j = nlohmann::json::object();
#define PYPTO_X(type, name, init) j[#name] = value.name;
  PYPTO_RUN_OPTIONS_FIELDS(PYPTO_X)
#undef PYPTO_X
  j["dfx"] = value.dfx;
}

// ---------------------------------------------------------------------------------------------
// RunConfig.

const char* field_owner_name(FieldOwner owner) {
  switch (owner) {
    case FieldOwner::kTarget:
      return "target";
    case FieldOwner::kCompile:
      return "CompileOptions";
    case FieldOwner::kRun:
      return "RunOptions";
    case FieldOwner::kDfx:
      return "DfxOptions";
    case FieldOwner::kHarnessOnly:
      break;
  }
  return "harness-only";
}

RunConfig RunConfig::from_platform(std::string_view platform) {
  RunConfig config;
  config.set_platform(platform);
  return config;
}

void RunConfig::set_platform(std::string_view platform) {
  const Platform parsed = parse_platform(platform);
  arch = parsed.arch;
  execution_mode = parsed.mode;
}

// The views are filled from the field table: one generated copy per row the view owns.
#define PYPTO_COPY_ROW(view_owner, owner, name, view_name)     \
  copy_if_owned<FieldOwner::k##owner, FieldOwner::view_owner>( \
      options, [this](auto& view) { view.view_name = name; });

CompileOptions RunConfig::compile_options() const {
  CompileOptions options;
  options.platform = platform();
#define PYPTO_X(owner, type, name, view_name, init) PYPTO_COPY_ROW(kCompile, owner, name, view_name)
  PYPTO_RUN_CONFIG_FIELDS(PYPTO_X)
#undef PYPTO_X
  return options;
}

DfxOptions RunConfig::dfx_options() const {
  DfxOptions options;
#define PYPTO_X(owner, type, name, view_name, init) PYPTO_COPY_ROW(kDfx, owner, name, view_name)
  PYPTO_RUN_CONFIG_FIELDS(PYPTO_X)
#undef PYPTO_X
  return options;
}

RunOptions RunConfig::run_options() const {
  RunOptions options;
  options.platform = platform();
#define PYPTO_X(owner, type, name, view_name, init) PYPTO_COPY_ROW(kRun, owner, name, view_name)
  PYPTO_RUN_CONFIG_FIELDS(PYPTO_X)
#undef PYPTO_X
  options.dfx = dfx_options();
  return options;
}

#undef PYPTO_COPY_ROW

nlohmann::json RunConfig::compile_kwargs() const { return compile_options().as_compile_kwargs(); }

RingSizes RunConfig::resolved_ring_sizes(const EnvLookup& env) const {
  return run_options().resolved_ring_sizes(env);
}

void RunConfig::validate() const {
  dfx_options().validate();
  validate_ring_override(RingKind::kTaskWindow, ring_task_window, "ring_task_window");
  validate_ring_override(RingKind::kHeap, ring_heap, "ring_heap");
  validate_ring_override(RingKind::kDepPool, ring_dep_pool, "ring_dep_pool");
  check_range("device_id", device_id, 0, std::numeric_limits<int>::max(), "device ordinal");
  check_range("aicpu_thread_num", aicpu_thread_num, 0, std::numeric_limits<int>::max(),
              "0 = the runtime's default");
  if (distributed_config) {
    if (distributed_config->device_ids.empty()) {
      throw UsageError("invalid distributed_config.device_ids=[]: must name at least one device");
    }
    for (int64_t id : distributed_config->device_ids) {
      check_range("distributed_config.device_ids[]", id, 0, std::numeric_limits<int>::max(),
                  "device ordinal");
    }
    check_range("distributed_config.aicpu_thread_num", distributed_config->aicpu_thread_num, 0,
                std::numeric_limits<int>::max(), "AICPU threads per chip");
    check_range("distributed_config.num_sub_workers", distributed_config->num_sub_workers, 0,
                std::numeric_limits<int>::max(), "host sub-workers");
  }
  check_non_negative("rtol", rtol);
  check_non_negative("atol", atol);
}

std::span<const FieldInfo> RunConfig::fields() {
#define PYPTO_X(owner, type, name, view_name, init) {#name, FieldOwner::k##owner, #view_name},
  static constexpr FieldInfo kFields[] = {PYPTO_RUN_CONFIG_FIELDS(PYPTO_X)};
#undef PYPTO_X
  return kFields;
}

}  // namespace pypto
