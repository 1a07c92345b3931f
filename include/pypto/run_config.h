// RunConfig: one aggregate carrying compile-time and dispatch-time settings,
// with three views naming its halves (docs/configuration.md):
//   CompileOptions  what the compile entry reads; compile_kwargs() is its only mapping
//   RunOptions      dispatch: platform, device id, aicpu threads, ring sizes, nested DFX
//   DfxOptions      the five DFX switches
// plus five harness-only fields no view claims. Every RunConfig member is declared
// by PYPTO_RUN_CONFIG_FIELDS together with its owner, and the views are filled from
// that same table, so a field cannot be added without saying who reads it.
// docs/configuration.md is the user-facing description.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pypto {

// ---------------------------------------------------------------------------------------------
// Platform: two decisions packed into one wire string.

enum class Arch { kA2A3 /* Ascend910B */, kA5 /* Ascend950 */ };
enum class ExecutionMode { kSim, kOnboard };

struct Platform {
  Arch arch = Arch::kA2A3;
  ExecutionMode mode = ExecutionMode::kSim;

  bool is_sim() const { return mode == ExecutionMode::kSim; }
  std::string name() const;  // "a2a3sim", "a2a3", "a5sim", "a5"
  bool operator==(const Platform&) const = default;
};

// The four wire spellings, in the order error messages list them.
inline constexpr std::array<std::string_view, 4> kPlatformNames = {"a2a3sim", "a2a3", "a5sim",
                                                                   "a5"};

// Throws UsageError "unknown platform 'x86'; valid platforms: a2a3sim, a2a3, a5sim, a5".
Platform parse_platform(std::string_view name);
// nullopt for an unknown spelling, for callers (sidecar readers) that raise their own error.
std::optional<Platform> try_parse_platform(std::string_view name);
std::string platform_name(Arch arch, ExecutionMode mode);
const char* arch_name(Arch arch);                // "a2a3" / "a5" (the .pto target arch)
const char* backend_type_name(Arch arch);        // "Ascend910B" / "Ascend950"
const char* execution_mode_name(ExecutionMode);  // "sim" / "onboard"
// Throws UsageError "unknown arch 'x'; valid archs: a2a3, a5".
Arch arch_from_name(std::string_view name);
// Only the simulated platforms execute on these machines: throws InfraError for onboard.
void require_executable_here(const Platform& platform);

// ---------------------------------------------------------------------------------------------
// Ring sizes. The runtime has four rings (one per scope depth, deeper scopes share ring 3),
// each with a task window, a heap and a dependency pool.

inline constexpr int kRingLevels = 4;

enum class RingKind { kTaskWindow, kHeap, kDepPool };

// One ring-size override: unset (empty), a scalar applied to every ring level, or exactly
// kRingLevels values, one per level, where 0 leaves that level to the next source.
struct RingOverride {
  std::vector<uint64_t> values;

  static RingOverride scalar(uint64_t value) { return {{value}}; }
  static RingOverride per_level(const std::array<uint64_t, kRingLevels>& levels) {
    RingOverride result;
    result.values.assign(levels.begin(), levels.end());
    return result;
  }
  bool is_set() const { return !values.empty(); }
  bool is_scalar() const { return values.size() == 1; }
  // The per-level values (a scalar broadcast); all zero when unset. Call validate first.
  std::array<uint64_t, kRingLevels> expanded() const;
  bool operator==(const RingOverride&) const = default;
};

const char* ring_field_name(RingKind kind);  // "ring_task_window", "ring_heap", "ring_dep_pool"
const char* ring_env_var(RingKind kind);     // "PTO2_RING_TASK_WINDOW", ...
const char* ring_rule(RingKind kind);        // e.g. "a power of 2 >= 1024 (bytes per ring)"

// Checks `value` against the rule of `kind`; `origin` names it in the message
// ("ring_heap", "PTO2_RING_HEAP", "--ring-heap"). Throws UsageError naming origin, the
// bad value and the rule.
void validate_ring_override(RingKind kind, const RingOverride& value, std::string_view origin);
// Parses "N" or "a,b,c,d" (spaces allowed) and validates it; empty text is unset.
RingOverride parse_ring_override(RingKind kind, std::string_view text, std::string_view origin);

enum class RingSource { kDefault, kEnv, kConfig };
const char* ring_source_name(RingSource source);  // "default", "env", "config"

struct RingValue {
  uint64_t value = 0;  // 0 exactly when source is kDefault: the runtime's built-in size
  RingSource source = RingSource::kDefault;
  bool operator==(const RingValue&) const = default;
};

// The ring sizes in force for one dispatch, per level, with where each came from.
struct RingSizes {
  std::array<RingValue, kRingLevels> task_window{};
  std::array<RingValue, kRingLevels> heap{};
  std::array<RingValue, kRingLevels> dep_pool{};

  const std::array<RingValue, kRingLevels>& of(RingKind kind) const;
  bool any_override() const;
  // "task_window=[16(config), 16(config), default, default] heap=... dep_pool=..."
  std::string describe() const;
};

// Environment access, injectable so tests and embedders need not touch the process env.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
EnvLookup process_env();

// Precedence per ring level: explicit override > PTO2_RING_* env var > runtime default.
// Validates all three overrides and the env vars that are consulted; throws UsageError.
RingSizes resolve_ring_sizes(const RingOverride& task_window, const RingOverride& heap,
                             const RingOverride& dep_pool, const EnvLookup& env = process_env());

void to_json(nlohmann::json& j, const RingOverride& value);  // null, N or [a, b, c, d]

// ---------------------------------------------------------------------------------------------
// Compile-side settings of an L3 (distributed) program, baked into the build.

// Also the distributed_config object of distributed_meta.json (artifact/distributed_meta.h).
struct DistributedConfig {
  std::vector<int64_t> device_ids = {0};  // one per rank, distinct, >= 0
  std::string runtime = "tensormap_and_ringbuffer";
  int64_t aicpu_thread_num = 4;  // 3 schedulers + 1 dispatcher of tensormap_and_ringbuffer
  int64_t num_sub_workers = 0;
  bool operator==(const DistributedConfig&) const = default;
};

void to_json(nlohmann::json& j, const DistributedConfig& value);

// ---------------------------------------------------------------------------------------------
// The views. Each view's members come from its own field list, which also yields fields(),
// so the completeness test compares what the view really has.

// X(type, name, default)
#define PYPTO_DFX_OPTIONS_FIELDS(X)                                       \
  X(int, enable_chip_swimlane, 0)    /* collection level 0..4, 0 = off */ \
  X(int, enable_dump_args, 0)        /* 0 off, 1 partial, 2 full */       \
  X(int, enable_pmu, 0)              /* PMU event set, 0 = off */         \
  X(bool, enable_dep_gen, false)     /* write deps.json */                \
  X(bool, enable_scope_stats, false) /* per-scope ring peaks, scope_stats.jsonl */

#define PYPTO_VIEW_DECLARE_MEMBER(type, name, init) type name = init;

// Which diagnostics one dispatch collects.
struct DfxOptions {
  PYPTO_DFX_OPTIONS_FIELDS(PYPTO_VIEW_DECLARE_MEMBER)

  bool any() const;  // any switch on: the dispatch needs a DFX output directory
  // Throws UsageError naming the switch, its value and the valid range.
  void validate() const;
  static std::span<const std::string_view> fields();
  bool operator==(const DfxOptions&) const = default;
};

// X(type, name, default); `platform` is the serialized pair of RunConfig's two axes.
#define PYPTO_COMPILE_OPTIONS_FIELDS(X)                                          \
  X(std::string, platform, "a2a3sim")                                            \
  X(std::string, strategy, "default")                                            \
  X(bool, dump_passes, false)                                                    \
  X(bool, dump_ptoas_passes, false)                                              \
  X(bool, profiling, false)                                                      \
  X(std::string, diagnostic_phase, "") /* empty: the compiler's default */       \
  X(std::vector<std::string>, disabled_diagnostics, {})                          \
  X(bool, analyze_auto_scopes_for_deps, false)                                   \
  X(std::string, output_dir, "")     /* empty: the compiler picks a directory */ \
  X(std::string, memory_planner, "") /* empty: the compiler's default planner */ \
  X(std::optional<DistributedConfig>, distributed_config, std::nullopt)

// The compile half, named as the compiler names it (output_dir, profiling). Usable alone:
// compile(program, CompileOptions{.platform = "a5sim"}.as_compile_kwargs()).
struct CompileOptions {
  PYPTO_COMPILE_OPTIONS_FIELDS(PYPTO_VIEW_DECLARE_MEMBER)

  // The keyword mapping for the compile entry. Unset optionals (empty strings, no
  // distributed_config) are absent, not null, so the compiler's own defaults apply.
  // Throws UsageError for an unknown platform.
  nlohmann::json as_compile_kwargs() const;
  Platform target() const { return parse_platform(platform); }
  static std::span<const std::string_view> fields();
  bool operator==(const CompileOptions&) const = default;
};

// X(type, name, default); the nested DfxOptions is declared separately.
#define PYPTO_RUN_OPTIONS_FIELDS(X)                          \
  X(std::string, platform, "a2a3sim")                        \
  X(int, device_id, 0)                                       \
  X(int, aicpu_thread_num, 0) /* 0: the runtime's default */ \
  X(RingOverride, ring_task_window, {})                      \
  X(RingOverride, ring_heap, {})                             \
  X(RingOverride, ring_dep_pool, {})

// The dispatch half. Internal vocabulary: dispatch entries take a RunConfig and call
// run_options() themselves (as in PyPTO).
struct RunOptions {
  PYPTO_RUN_OPTIONS_FIELDS(PYPTO_VIEW_DECLARE_MEMBER)
  DfxOptions dfx;

  Platform target() const { return parse_platform(platform); }
  RingSizes resolved_ring_sizes(const EnvLookup& env = process_env()) const;
  static std::span<const std::string_view> fields();  // without the nested dfx
  bool operator==(const RunOptions&) const = default;
};

void to_json(nlohmann::json& j, const DfxOptions& value);
void to_json(nlohmann::json& j, const RunOptions& value);

// ---------------------------------------------------------------------------------------------
// RunConfig.

// Who reads a RunConfig field. Every field has exactly one owner.
enum class FieldOwner {
  kTarget,       // the platform axes; CompileOptions and RunOptions carry them as `platform`
  kCompile,      // CompileOptions
  kRun,          // RunOptions
  kDfx,          // DfxOptions (nested in RunOptions)
  kHarnessOnly,  // read only by the system-test harness; no view
};
const char* field_owner_name(FieldOwner owner);

struct FieldInfo {
  std::string_view name;  // RunConfig member
  FieldOwner owner;
  std::string_view view_name;  // the member's name in its view (== name unless renamed)
};

// THE list of RunConfig fields: X(owner, type, name, view_name, default). Adding a member
// means adding a row here, and a row cannot be written without an owner; an owned row whose
// view_name the view lacks does not compile (see run_config.cc).
#define PYPTO_RUN_CONFIG_FIELDS(X)                                                     \
  X(Target, Arch, arch, platform, Arch::kA2A3)                                         \
  X(Target, ExecutionMode, execution_mode, platform, ExecutionMode::kSim)              \
  X(Compile, std::string, strategy, strategy, "default")                               \
  X(Compile, bool, dump_passes, dump_passes, false)                                    \
  X(Compile, bool, dump_ptoas_passes, dump_ptoas_passes, false)                        \
  X(Compile, bool, compile_profiling, profiling, false)                                \
  X(Compile, std::string, diagnostic_phase, diagnostic_phase, "")                      \
  X(Compile, std::vector<std::string>, disabled_diagnostics, disabled_diagnostics, {}) \
  X(Compile, bool, analyze_auto_scopes_for_deps, analyze_auto_scopes_for_deps, false)  \
  X(Compile, std::string, save_kernels_dir, output_dir, "")                            \
  X(Compile, std::string, memory_planner, memory_planner, "")                          \
  X(Compile, std::optional<DistributedConfig>, distributed_config, distributed_config, \
    std::nullopt)                                                                      \
  X(Run, int, device_id, device_id, 0)                                                 \
  X(Run, int, aicpu_thread_num, aicpu_thread_num, 0)                                   \
  X(Run, RingOverride, ring_task_window, ring_task_window, {})                         \
  X(Run, RingOverride, ring_heap, ring_heap, {})                                       \
  X(Run, RingOverride, ring_dep_pool, ring_dep_pool, {})                               \
  X(Dfx, int, enable_chip_swimlane, enable_chip_swimlane, 0)                           \
  X(Dfx, int, enable_dump_args, enable_dump_args, 0)                                   \
  X(Dfx, int, enable_pmu, enable_pmu, 0)                                               \
  X(Dfx, bool, enable_dep_gen, enable_dep_gen, false)                                  \
  X(Dfx, bool, enable_scope_stats, enable_scope_stats, false)                          \
  X(HarnessOnly, std::string, golden_data_dir, golden_data_dir, "")                    \
  X(HarnessOnly, bool, save_kernels, save_kernels, false)                              \
  X(HarnessOnly, bool, codegen_only, codegen_only, false)                              \
  X(HarnessOnly, double, rtol, rtol, 1e-5)                                             \
  X(HarnessOnly, double, atol, atol, 1e-5) /* last: 8-byte, see the static_assert */

#define PYPTO_RUN_CONFIG_DECLARE_MEMBER(owner, type, name, view_name, init) type name = init;

// An aggregate: RunConfig{.device_id = 3} works; members are in PYPTO_RUN_CONFIG_FIELDS order.
struct RunConfig {
  // Every data member comes from the table; declare none by hand (a static_assert checks).
  PYPTO_RUN_CONFIG_FIELDS(PYPTO_RUN_CONFIG_DECLARE_MEMBER)

  // Sets both axes from a wire spelling; throws UsageError listing the valid ones.
  static RunConfig from_platform(std::string_view platform);
  void set_platform(std::string_view platform);
  Platform target() const { return {arch, execution_mode}; }
  std::string platform() const { return platform_name(arch, execution_mode); }
  bool is_sim() const { return execution_mode == ExecutionMode::kSim; }

  CompileOptions compile_options() const;
  RunOptions run_options() const;
  DfxOptions dfx_options() const;
  // THE one mapping into the compile entry: exactly compile_options().as_compile_kwargs().
  nlohmann::json compile_kwargs() const;
  bool any_dfx_enabled() const { return dfx_options().any(); }
  // DFX output lands beside the kernels, so any DFX switch keeps them (as in PyPTO).
  bool keeps_kernels() const { return save_kernels || any_dfx_enabled(); }

  // Per-level ring sizes in force: this config > PTO2_RING_* env > runtime default.
  RingSizes resolved_ring_sizes(const EnvLookup& env = process_env()) const;
  // Checks the DFX levels, ring overrides and dispatch numbers; throws UsageError naming the
  // field, the bad value and the rule.
  void validate() const;

  // Every field with its owner, in declaration order.
  static std::span<const FieldInfo> fields();
  bool operator==(const RunConfig&) const = default;
};

namespace detail {
// The table's members alone; RunConfig must be exactly this big (backstop for a member
// declared outside the table). The table ends with a double, so there is no tail padding
// in which an appended stray member could hide.
struct RunConfigTableOnly {
  PYPTO_RUN_CONFIG_FIELDS(PYPTO_RUN_CONFIG_DECLARE_MEMBER)
};
}  // namespace detail
static_assert(sizeof(RunConfig) == sizeof(detail::RunConfigTableOnly),
              "RunConfig has a data member outside PYPTO_RUN_CONFIG_FIELDS; add it to the "
              "table with its owner");

}  // namespace pypto
