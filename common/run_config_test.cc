#include "pypto/run_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include "pypto/error.h"

namespace pypto {
namespace {

// gmock is not linked; a plain substring check with a readable failure.
testing::AssertionResult Contains(const std::string& text, const std::string& needle) {
  if (text.find(needle) != std::string::npos) return testing::AssertionSuccess();
  return testing::AssertionFailure() << "'" << text << "' does not contain '" << needle << "'";
}
#define EXPECT_CONTAINS(text, needle) EXPECT_TRUE(Contains(text, needle))

// The message of the UsageError `f` throws; fails the test when it throws nothing.
template <typename F>
std::string usage_error_of(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    EXPECT_EQ(e.exit_code(), ExitCode::kUsage);
    return e.what();
  }
  ADD_FAILURE() << "expected a UsageError";
  return "";
}

// A fake environment, so most ring tests never touch the process env.
EnvLookup fake_env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

// Sets (or unsets) one process env var for the scope and restores the old state after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      setenv(name, value, /*overwrite=*/1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

RingValue cfg(uint64_t v) { return {v, RingSource::kConfig}; }
RingValue env(uint64_t v) { return {v, RingSource::kEnv}; }
const RingValue kDefault{};

// ---------------------------------------------------------------------------------------------
// Platform.

struct PlatformCase {
  const char* name;
  Arch arch;
  ExecutionMode mode;
};

TEST(PlatformTest, AllFourSpellingsRoundTripThroughBothAxes) {
  const PlatformCase cases[] = {{"a2a3sim", Arch::kA2A3, ExecutionMode::kSim},
                                {"a2a3", Arch::kA2A3, ExecutionMode::kOnboard},
                                {"a5sim", Arch::kA5, ExecutionMode::kSim},
                                {"a5", Arch::kA5, ExecutionMode::kOnboard}};
  for (const PlatformCase& c : cases) {
    SCOPED_TRACE(c.name);
    const RunConfig config = RunConfig::from_platform(c.name);
    EXPECT_EQ(config.arch, c.arch);
    EXPECT_EQ(config.execution_mode, c.mode);
    EXPECT_EQ(config.platform(), c.name);
    EXPECT_EQ(config.is_sim(), c.mode == ExecutionMode::kSim);
    EXPECT_EQ(config.target(), parse_platform(c.name));
    EXPECT_EQ(parse_platform(c.name).name(), c.name);
    EXPECT_EQ(platform_name(c.arch, c.mode), c.name);

    // Setting the axes directly serializes to the same spelling.
    RunConfig by_axes;
    by_axes.arch = c.arch;
    by_axes.execution_mode = c.mode;
    EXPECT_EQ(by_axes.platform(), c.name);
    // The views carry the wire spelling.
    EXPECT_EQ(config.compile_options().platform, c.name);
    EXPECT_EQ(config.run_options().platform, c.name);
  }
  EXPECT_EQ(std::set<std::string_view>(kPlatformNames.begin(), kPlatformNames.end()).size(), 4u);
}

TEST(PlatformTest, DefaultIsA2a3sim) {
  const RunConfig config;
  EXPECT_EQ(config.platform(), "a2a3sim");
  EXPECT_EQ(config.arch, Arch::kA2A3);
  EXPECT_TRUE(config.is_sim());
}

TEST(PlatformTest, SetPlatformSetsBothAxes) {
  RunConfig config = RunConfig::from_platform("a2a3sim");
  config.set_platform("a5");
  EXPECT_EQ(config.arch, Arch::kA5);
  EXPECT_EQ(config.execution_mode, ExecutionMode::kOnboard);
  config.set_platform("a2a3sim");
  EXPECT_EQ(config.arch, Arch::kA2A3);
  EXPECT_EQ(config.execution_mode, ExecutionMode::kSim);
}

TEST(PlatformTest, UnknownPlatformListsTheValidOnes) {
  EXPECT_EQ(usage_error_of([] { RunConfig::from_platform("x86"); }),
            "unknown platform 'x86'; valid platforms: a2a3sim, a2a3, a5sim, a5");
  EXPECT_EQ(usage_error_of([] { parse_platform("A5"); }),
            "unknown platform 'A5'; valid platforms: a2a3sim, a2a3, a5sim, a5");
  EXPECT_FALSE(try_parse_platform("a5 ").has_value());

  // A failed set_platform leaves the config as it was.
  RunConfig config = RunConfig::from_platform("a5sim");
  usage_error_of([&] { config.set_platform("ascend"); });
  EXPECT_EQ(config.platform(), "a5sim");
}

TEST(PlatformTest, ArchNames) {
  EXPECT_STREQ(arch_name(Arch::kA2A3), "a2a3");
  EXPECT_STREQ(arch_name(Arch::kA5), "a5");
  EXPECT_EQ(arch_from_name("a2a3"), Arch::kA2A3);
  EXPECT_EQ(arch_from_name("a5"), Arch::kA5);
  EXPECT_STREQ(backend_type_name(Arch::kA2A3), "Ascend910B");
  EXPECT_STREQ(backend_type_name(Arch::kA5), "Ascend950");
  EXPECT_STREQ(execution_mode_name(ExecutionMode::kOnboard), "onboard");
  EXPECT_EQ(usage_error_of([] { arch_from_name("a2a3sim"); }),
            "unknown arch 'a2a3sim'; valid archs: a2a3, a5");
}

TEST(PlatformTest, OnlySimulatedPlatformsExecuteHere) {
  EXPECT_NO_THROW(require_executable_here(parse_platform("a2a3sim")));
  EXPECT_NO_THROW(require_executable_here(parse_platform("a5sim")));
  try {
    require_executable_here(parse_platform("a5"));
    FAIL() << "onboard must be refused";
  } catch (const InfraError& e) {
    EXPECT_EQ(e.exit_code(), ExitCode::kInfra);
    EXPECT_CONTAINS(e.what(), "'a5'");
    EXPECT_CONTAINS(e.what(), "Ascend950");
    EXPECT_CONTAINS(e.what(), "use 'a5sim'");
  }
}

// ---------------------------------------------------------------------------------------------
// Ring sizes.

TEST(RingSizesTest, UnsetEverywhereIsTheRuntimeDefault) {
  const RingSizes sizes = RunConfig{}.resolved_ring_sizes(fake_env({}));
  for (RingKind kind : {RingKind::kTaskWindow, RingKind::kHeap, RingKind::kDepPool}) {
    for (const RingValue& value : sizes.of(kind)) EXPECT_EQ(value, kDefault);
  }
  EXPECT_FALSE(sizes.any_override());
  EXPECT_EQ(sizes.describe(),
            "task_window=[default, default, default, default] "
            "heap=[default, default, default, default] "
            "dep_pool=[default, default, default, default]");
}

TEST(RingSizesTest, ScalarExpandsToAllFourLevels) {
  RunConfig config;
  config.ring_task_window = RingOverride::scalar(128);
  config.ring_heap = RingOverride::scalar(8 << 20);
  const RingSizes sizes = config.resolved_ring_sizes(fake_env({}));
  for (int level = 0; level < kRingLevels; ++level) {
    EXPECT_EQ(sizes.task_window[level], cfg(128));
    EXPECT_EQ(sizes.heap[level], cfg(8 << 20));
    EXPECT_EQ(sizes.dep_pool[level], kDefault);
  }
  EXPECT_TRUE(sizes.any_override());
}

TEST(RingSizesTest, FourValuesSizeEachLevel) {
  RunConfig config;
  config.ring_task_window = RingOverride::per_level({16, 32, 128, 256});
  config.ring_dep_pool = RingOverride::per_level({8, 16, 100, 256});  // need not be pow2
  const RingSizes sizes = config.resolved_ring_sizes(fake_env({}));
  EXPECT_EQ(sizes.task_window, (std::array{cfg(16), cfg(32), cfg(128), cfg(256)}));
  EXPECT_EQ(sizes.dep_pool, (std::array{cfg(8), cfg(16), cfg(100), cfg(256)}));
}

TEST(RingSizesTest, ExplicitBeatsEnvBeatsDefaultPerLevel) {
  RunConfig config;
  // Level 1 and 2 are 0: left to the env, which itself leaves level 2 to the default.
  config.ring_task_window = RingOverride::per_level({16, 0, 0, 256});
  config.ring_heap = RingOverride::scalar(4096);
  const RingSizes sizes = config.resolved_ring_sizes(fake_env({
      {"PTO2_RING_TASK_WINDOW", "64,64,0,64"},
      {"PTO2_RING_HEAP", "1048576"},  // ignored: the config sizes every heap level
      {"PTO2_RING_DEP_POOL", "1000"},
  }));
  EXPECT_EQ(sizes.task_window, (std::array{cfg(16), env(64), kDefault, cfg(256)}));
  EXPECT_EQ(sizes.heap, (std::array{cfg(4096), cfg(4096), cfg(4096), cfg(4096)}));
  EXPECT_EQ(sizes.dep_pool, (std::array{env(1000), env(1000), env(1000), env(1000)}));
  EXPECT_EQ(sizes.describe(),
            "task_window=[16(config), 64(env), default, 256(config)] "
            "heap=[4096(config), 4096(config), 4096(config), 4096(config)] "
            "dep_pool=[1000(env), 1000(env), 1000(env), 1000(env)]");
}

TEST(RingSizesTest, ReadsTheProcessEnvironment) {
  ScopedEnv window("PTO2_RING_TASK_WINDOW", "1024");
  ScopedEnv heap("PTO2_RING_HEAP", " 1024 , 2048,4096 ,8192 ");
  ScopedEnv pool("PTO2_RING_DEP_POOL", "");  // set but empty: no override
  RunConfig config;
  RingSizes sizes = config.resolved_ring_sizes();
  EXPECT_EQ(sizes.task_window, (std::array{env(1024), env(1024), env(1024), env(1024)}));
  EXPECT_EQ(sizes.heap, (std::array{env(1024), env(2048), env(4096), env(8192)}));
  EXPECT_EQ(sizes.dep_pool[0], kDefault);

  config.ring_task_window = RingOverride::scalar(8);
  sizes = config.resolved_ring_sizes();
  EXPECT_EQ(sizes.task_window[3], cfg(8));
}

TEST(RingSizesTest, ScopedEnvRestoresTheOldValue) {
  {
    ScopedEnv outer("PTO2_RING_DEP_POOL", "64");
    {
      ScopedEnv inner("PTO2_RING_DEP_POOL", nullptr);
      EXPECT_EQ(std::getenv("PTO2_RING_DEP_POOL"), nullptr);
    }
    EXPECT_STREQ(std::getenv("PTO2_RING_DEP_POOL"), "64");
  }
}

TEST(RingSizesTest, BoundariesAccepted) {
  RunConfig config;
  config.ring_task_window = RingOverride::scalar(4);
  config.ring_heap = RingOverride::scalar(1024);
  config.ring_dep_pool = RingOverride::scalar(4);
  EXPECT_NO_THROW(config.validate());
  config.ring_task_window = RingOverride::scalar(uint64_t{1} << 30);
  config.ring_dep_pool = RingOverride::scalar(2147483647);
  config.ring_heap = RingOverride::scalar(uint64_t{1} << 40);
  EXPECT_NO_THROW(config.validate());
  EXPECT_NO_THROW(config.resolved_ring_sizes(fake_env({})));
}

TEST(RingSizesTest, BadExplicitValuesNameFieldValueAndRule) {
  const auto error_for = [](RingKind kind, RingOverride value) {
    RunConfig config;
    (kind == RingKind::kTaskWindow ? config.ring_task_window
     : kind == RingKind::kHeap     ? config.ring_heap
                                   : config.ring_dep_pool) = std::move(value);
    const std::string from_validate = usage_error_of([&] { config.validate(); });
    // Resolution reports the same problem.
    EXPECT_EQ(usage_error_of([&] { config.resolved_ring_sizes(fake_env({})); }), from_validate);
    return from_validate;
  };
  EXPECT_EQ(error_for(RingKind::kTaskWindow, RingOverride::scalar(6)),
            "invalid ring_task_window=6: must be a power of 2 in [4, INT32_MAX] "
            "(task slots per ring)");
  EXPECT_CONTAINS(error_for(RingKind::kTaskWindow, RingOverride::scalar(0)),
                  "ring_task_window=0: must be a power of 2");
  EXPECT_CONTAINS(error_for(RingKind::kTaskWindow, RingOverride::scalar(uint64_t{1} << 31)),
                  "ring_task_window=2147483648");
  EXPECT_EQ(error_for(RingKind::kHeap, RingOverride::scalar(512)),
            "invalid ring_heap=512: must be a power of 2 >= 1024 (bytes per ring)");
  EXPECT_CONTAINS(error_for(RingKind::kHeap, RingOverride::scalar(1536)),
                  "ring_heap=1536: must be a power of 2 >= 1024");
  EXPECT_EQ(error_for(RingKind::kDepPool, RingOverride::scalar(3)),
            "invalid ring_dep_pool=3: must be an integer in [4, INT32_MAX] "
            "(dependency entries per ring)");
  EXPECT_CONTAINS(error_for(RingKind::kDepPool, RingOverride::scalar(uint64_t{1} << 31)),
                  "ring_dep_pool=2147483648: must be an integer in [4, INT32_MAX]");
  EXPECT_EQ(error_for(RingKind::kTaskWindow, RingOverride::per_level({16, 32, 48, 64})),
            "invalid ring_task_window[2]=48: entries must be a power of 2 in [4, INT32_MAX] "
            "(task slots per ring), or 0 to leave that ring level at its default");
  EXPECT_CONTAINS(error_for(RingKind::kHeap, RingOverride::per_level({1024, 2048, 512, 4096})),
                  "ring_heap[2]=512: entries must be a power of 2 >= 1024");
  for (size_t length : {2u, 3u, 5u}) {
    EXPECT_EQ(error_for(RingKind::kDepPool, RingOverride{std::vector<uint64_t>(length, 8)}),
              "invalid ring_dep_pool=[" +
                  std::string(length == 2   ? "8, 8"
                              : length == 3 ? "8, 8, 8"
                                            : "8, 8, 8, 8, 8") +
                  "]: " + std::to_string(length) +
                  " values given; must be one scalar (applied to all 4 ring levels) or exactly "
                  "4 entries, one per ring level");
  }
}

TEST(RingSizesTest, BadEnvValuesNameTheVariable) {
  const auto error_for = [](const char* var, const char* value) {
    return usage_error_of([&] { RunConfig{}.resolved_ring_sizes(fake_env({{var, value}})); });
  };
  EXPECT_EQ(error_for("PTO2_RING_TASK_WINDOW", "6"),
            "invalid PTO2_RING_TASK_WINDOW=6: must be a power of 2 in [4, INT32_MAX] "
            "(task slots per ring)");
  EXPECT_EQ(error_for("PTO2_RING_HEAP", "1k"),
            "invalid PTO2_RING_HEAP='1k': '1k' is not an unsigned integer; expected N or 4 "
            "comma-separated values a,b,c,d, each a power of 2 >= 1024 (bytes per ring)");
  EXPECT_CONTAINS(error_for("PTO2_RING_DEP_POOL", "-1"), "'-1' is not an unsigned integer");
  EXPECT_CONTAINS(error_for("PTO2_RING_DEP_POOL", "8,,8,8"),
                  "invalid PTO2_RING_DEP_POOL='8,,8,8': '' is not an unsigned integer");
  EXPECT_CONTAINS(error_for("PTO2_RING_HEAP", "99999999999999999999999"), "is out of range");
  EXPECT_CONTAINS(error_for("PTO2_RING_DEP_POOL", "8,8,8"),
                  "invalid PTO2_RING_DEP_POOL=[8, 8, 8]: 3 values given");
  EXPECT_CONTAINS(error_for("PTO2_RING_TASK_WINDOW", "16,32,48,64"),
                  "invalid PTO2_RING_TASK_WINDOW[2]=48: entries must be a power of 2");
}

TEST(RingSizesTest, EnvIsReadOnlyWhenALevelFallsThroughToIt) {
  RunConfig config;
  config.ring_heap = RingOverride::scalar(1024);
  // The config sizes every heap level, so the broken variable is never consulted.
  EXPECT_NO_THROW(config.resolved_ring_sizes(fake_env({{"PTO2_RING_HEAP", "garbage"}})));
  config.ring_heap = RingOverride::per_level({1024, 0, 1024, 1024});
  EXPECT_CONTAINS(usage_error_of([&] {
                    config.resolved_ring_sizes(fake_env({{"PTO2_RING_HEAP", "garbage"}}));
                  }),
                  "PTO2_RING_HEAP='garbage'");
}

TEST(RingSizesTest, ParseAndJson) {
  EXPECT_EQ(parse_ring_override(RingKind::kHeap, "2048", "--ring-heap"),
            RingOverride::scalar(2048));
  EXPECT_EQ(parse_ring_override(RingKind::kDepPool, "8,0,0,64", "--ring-dep-pool"),
            RingOverride::per_level({8, 0, 0, 64}));
  EXPECT_FALSE(parse_ring_override(RingKind::kDepPool, "  ", "x").is_set());
  EXPECT_CONTAINS(
      usage_error_of([] { parse_ring_override(RingKind::kHeap, "100", "--ring-heap"); }),
      "invalid --ring-heap=100");
  EXPECT_EQ(nlohmann::json(RingOverride{}), nullptr);
  EXPECT_EQ(nlohmann::json(RingOverride::scalar(64)), 64);
  EXPECT_EQ(nlohmann::json(RingOverride::per_level({1, 2, 3, 4})), nlohmann::json({1, 2, 3, 4}));
  EXPECT_STREQ(ring_env_var(RingKind::kDepPool), "PTO2_RING_DEP_POOL");
  EXPECT_STREQ(ring_field_name(RingKind::kTaskWindow), "ring_task_window");
}

// ---------------------------------------------------------------------------------------------
// compile_kwargs and the views.

TEST(RunConfigCompileKwargsTest, DefaultsLeaveUnsetOptionalsOut) {
  const nlohmann::json kwargs = RunConfig{}.compile_kwargs();
  std::set<std::string> keys;
  for (const auto& [key, value] : kwargs.items()) keys.insert(key);
  EXPECT_EQ(keys, (std::set<std::string>{"platform", "strategy", "dump_passes", "dump_ptoas_passes",
                                         "profiling", "disabled_diagnostics",
                                         "analyze_auto_scopes_for_deps"}));
  EXPECT_EQ(kwargs["platform"], "a2a3sim");
  EXPECT_EQ(kwargs["strategy"], "default");
  EXPECT_EQ(kwargs["disabled_diagnostics"], nlohmann::json::array());
}

TEST(RunConfigCompileKwargsTest, CarriesTheCompileHalfInTheCompilersNames) {
  RunConfig config = RunConfig::from_platform("a5sim");
  config.strategy = "pipelined";
  config.dump_passes = true;
  config.dump_ptoas_passes = true;
  config.compile_profiling = true;
  config.diagnostic_phase = "post_pipeline";
  config.disabled_diagnostics = {"W001", "W007"};
  config.analyze_auto_scopes_for_deps = true;
  config.save_kernels_dir = "/tmp/out";
  config.memory_planner = "dsa_rp";
  config.distributed_config = DistributedConfig{{0, 1}, "tensormap_and_ringbuffer", 4, 2};
  // Dispatch and harness fields must not leak in.
  config.device_id = 3;
  config.rtol = 1e-3;
  config.enable_pmu = 2;
  config.ring_heap = RingOverride::scalar(1 << 20);
  config.save_kernels = true;

  const nlohmann::json kwargs = config.compile_kwargs();
  EXPECT_EQ(kwargs, (nlohmann::json{
                        {"platform", "a5sim"},
                        {"strategy", "pipelined"},
                        {"dump_passes", true},
                        {"dump_ptoas_passes", true},
                        {"profiling", true},
                        {"diagnostic_phase", "post_pipeline"},
                        {"disabled_diagnostics", {"W001", "W007"}},
                        {"analyze_auto_scopes_for_deps", true},
                        {"output_dir", "/tmp/out"},
                        {"memory_planner", "dsa_rp"},
                        {"distributed_config",
                         {{"device_ids", {0, 1}},
                          {"runtime", "tensormap_and_ringbuffer"},
                          {"aicpu_thread_num", 4},
                          {"num_sub_workers", 2}}},
                    }));
  EXPECT_EQ(kwargs, config.compile_options().as_compile_kwargs());
  EXPECT_FALSE(kwargs.contains("backend_type"));  // the compiler derives it from platform
}

TEST(RunConfigCompileKwargsTest, CompileOptionsStandAlone) {
  CompileOptions options;
  options.platform = "a5";
  EXPECT_EQ(options.as_compile_kwargs()["platform"], "a5");
  EXPECT_EQ(options.target().arch, Arch::kA5);
  options.platform = "x86";
  EXPECT_CONTAINS(usage_error_of([&] { options.as_compile_kwargs(); }), "unknown platform 'x86'");
}

TEST(RunConfigViewsTest, RunOptionsCarryTheDispatchHalfWithDfxNested) {
  RunConfig config = RunConfig::from_platform("a2a3");
  config.device_id = 3;
  config.aicpu_thread_num = 7;
  config.ring_heap = RingOverride::scalar(1 << 20);
  config.enable_pmu = 2;
  const RunOptions options = config.run_options();
  EXPECT_EQ(options.platform, "a2a3");
  EXPECT_EQ(options.device_id, 3);
  EXPECT_EQ(options.aicpu_thread_num, 7);
  EXPECT_EQ(options.ring_heap, RingOverride::scalar(1 << 20));
  EXPECT_EQ(options.dfx, config.dfx_options());
  EXPECT_EQ(options.dfx.enable_pmu, 2);
  const nlohmann::json j = options;
  EXPECT_EQ(j["ring_heap"], 1 << 20);
  EXPECT_EQ(j["ring_task_window"], nullptr);
  EXPECT_EQ(j["dfx"]["enable_pmu"], 2);
}

TEST(RunConfigDfxTest, AnyIsTrueForEachOfTheFiveAlone) {
  EXPECT_FALSE(DfxOptions{}.any());
  EXPECT_FALSE(RunConfig{}.any_dfx_enabled());
  EXPECT_FALSE(RunConfig{}.keeps_kernels());
  const auto with = [](auto set) {
    RunConfig config;
    set(config);
    return config;
  };
  const RunConfig each[] = {
      with([](RunConfig& c) { c.enable_chip_swimlane = 1; }),
      with([](RunConfig& c) { c.enable_dump_args = 2; }),
      with([](RunConfig& c) { c.enable_pmu = 4; }),
      with([](RunConfig& c) { c.enable_dep_gen = true; }),
      with([](RunConfig& c) { c.enable_scope_stats = true; }),
  };
  for (const RunConfig& config : each) {
    EXPECT_TRUE(config.dfx_options().any());
    EXPECT_EQ(config.any_dfx_enabled(), config.dfx_options().any());
    EXPECT_TRUE(config.keeps_kernels());  // DFX output lands beside the kernels
    EXPECT_FALSE(config.save_kernels);    // ... without rewriting the harness field
  }
}

TEST(RunConfigDfxTest, LevelsAreRangeChecked) {
  RunConfig config;
  config.enable_chip_swimlane = 5;
  EXPECT_EQ(usage_error_of([&] { config.validate(); }),
            "invalid enable_chip_swimlane=5: must be in [0, 4] (swimlane collection level, 0 = "
            "off)");
  config.enable_chip_swimlane = 4;
  config.enable_dump_args = 3;
  EXPECT_CONTAINS(usage_error_of([&] { config.validate(); }), "enable_dump_args=3");
  config.enable_dump_args = 0;
  config.enable_pmu = -1;
  EXPECT_CONTAINS(usage_error_of([&] { config.validate(); }), "enable_pmu=-1");
  config.enable_pmu = 0;
  EXPECT_NO_THROW(config.validate());
}

TEST(RunConfigViewsTest, ValidateChecksDispatchNumbers) {
  RunConfig config;
  config.device_id = -1;
  EXPECT_CONTAINS(usage_error_of([&] { config.validate(); }), "device_id=-1");
  config.device_id = 0;
  config.distributed_config = DistributedConfig{};
  config.distributed_config->device_ids.clear();
  EXPECT_CONTAINS(usage_error_of([&] { config.validate(); }), "distributed_config.device_ids=[]");
  config.distributed_config->device_ids = {0, 1};
  EXPECT_NO_THROW(config.validate());
}

// ---------------------------------------------------------------------------------------------
// Completeness: every RunConfig field is claimed by exactly one view or is harness-only, and
// each view's own member list is exactly what the table assigns to it.

std::set<std::string_view> view_names_owned_by(FieldOwner owner) {
  std::set<std::string_view> names;
  for (const FieldInfo& field : RunConfig::fields()) {
    if (field.owner == owner) names.insert(field.view_name);
  }
  return names;
}

template <typename Span>
std::set<std::string_view> as_set(const Span& names) {
  return {names.begin(), names.end()};
}

TEST(RunConfigCompletenessTest, EveryFieldHasExactlyOneOwner) {
  std::map<std::string_view, int> owners_per_field;
  for (const FieldInfo& field : RunConfig::fields()) ++owners_per_field[field.name];
  for (const auto& [name, count] : owners_per_field) EXPECT_EQ(count, 1) << name;
  EXPECT_EQ(owners_per_field.size(), RunConfig::fields().size());
  EXPECT_EQ(RunConfig::fields().size(), 27u);  // bump deliberately when adding a field
}

TEST(RunConfigCompletenessTest, HarnessOnlySetIsExactlyTheFive) {
  std::set<std::string_view> harness;
  for (const FieldInfo& field : RunConfig::fields()) {
    if (field.owner == FieldOwner::kHarnessOnly) harness.insert(field.name);
  }
  EXPECT_EQ(harness, (std::set<std::string_view>{"rtol", "atol", "golden_data_dir", "save_kernels",
                                                 "codegen_only"}));
}

TEST(RunConfigCompletenessTest, PlatformAxesAreTheOnlyTargetFields) {
  EXPECT_EQ(view_names_owned_by(FieldOwner::kTarget), (std::set<std::string_view>{"platform"}));
  std::set<std::string_view> target;
  for (const FieldInfo& field : RunConfig::fields()) {
    if (field.owner == FieldOwner::kTarget) target.insert(field.name);
  }
  EXPECT_EQ(target, (std::set<std::string_view>{"arch", "execution_mode"}));
}

TEST(RunConfigCompletenessTest, EachViewHoldsExactlyItsFields) {
  std::set<std::string_view> compile = view_names_owned_by(FieldOwner::kCompile);
  compile.insert("platform");  // the target axes, serialized
  EXPECT_EQ(as_set(CompileOptions::fields()), compile);
  EXPECT_EQ(CompileOptions::fields().size(), compile.size());  // no duplicate view members

  std::set<std::string_view> run = view_names_owned_by(FieldOwner::kRun);
  run.insert("platform");
  EXPECT_EQ(as_set(RunOptions::fields()), run);
  EXPECT_EQ(RunOptions::fields().size(), run.size());

  EXPECT_EQ(as_set(DfxOptions::fields()), view_names_owned_by(FieldOwner::kDfx));
  EXPECT_EQ(DfxOptions::fields().size(), 5u);
}

TEST(RunConfigCompletenessTest, OnlyTheDocumentedRenames) {
  std::map<std::string_view, std::string_view> renames;
  for (const FieldInfo& field : RunConfig::fields()) {
    if (field.name != field.view_name && field.owner != FieldOwner::kTarget) {
      renames[field.name] = field.view_name;
    }
  }
  EXPECT_EQ(renames, (std::map<std::string_view, std::string_view>{
                         {"compile_profiling", "profiling"}, {"save_kernels_dir", "output_dir"}}));
}

TEST(RunConfigCompletenessTest, ViewDefaultsAgreeWithRunConfigDefaults) {
  const RunConfig config;
  EXPECT_EQ(config.compile_options(), CompileOptions{});
  EXPECT_EQ(config.run_options(), RunOptions{});
  EXPECT_EQ(config.dfx_options(), DfxOptions{});
}

TEST(RunConfigCompletenessTest, EveryOwnedValueReachesItsView) {
  // Change every non-harness field; each view must differ from its default in exactly the
  // members the table says it owns.
  RunConfig config = RunConfig::from_platform("a5");
  config.strategy = "s";
  config.dump_passes = config.dump_ptoas_passes = config.compile_profiling = true;
  config.diagnostic_phase = "p";
  config.disabled_diagnostics = {"d"};
  config.analyze_auto_scopes_for_deps = true;
  config.save_kernels_dir = "o";
  config.memory_planner = "m";
  config.distributed_config = DistributedConfig{};
  config.device_id = 1;
  config.aicpu_thread_num = 2;
  config.ring_task_window = config.ring_dep_pool = RingOverride::scalar(8);
  config.ring_heap = RingOverride::scalar(2048);
  config.enable_chip_swimlane = config.enable_dump_args = config.enable_pmu = 1;
  config.enable_dep_gen = config.enable_scope_stats = true;

  const auto changed_keys = [](const nlohmann::json& now, const nlohmann::json& before) {
    std::set<std::string> keys;
    for (const auto& [key, value] : now.items()) {
      if (!before.contains(key) || before[key] != value) keys.insert(key);
    }
    return keys;
  };
  const auto string_set = [](const std::set<std::string_view>& names) {
    return std::set<std::string>(names.begin(), names.end());
  };
  std::set<std::string_view> compile = view_names_owned_by(FieldOwner::kCompile);
  compile.insert("platform");
  EXPECT_EQ(changed_keys(config.compile_kwargs(), CompileOptions{}.as_compile_kwargs()),
            string_set(compile));

  std::set<std::string_view> run = view_names_owned_by(FieldOwner::kRun);
  run.insert("platform");
  run.insert("dfx");
  EXPECT_EQ(changed_keys(nlohmann::json(config.run_options()), nlohmann::json(RunOptions{})),
            string_set(run));
  EXPECT_EQ(changed_keys(nlohmann::json(config.dfx_options()), nlohmann::json(DfxOptions{})),
            string_set(view_names_owned_by(FieldOwner::kDfx)));
}

}  // namespace
}  // namespace pypto
