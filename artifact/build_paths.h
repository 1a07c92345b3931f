// Names of the files and directories of a build directory (docs/build-directory.md)
// and the one remedy every sidecar error carries, so that messages and layout
// stay in one place.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace pypto {

namespace fs = std::filesystem;

// The only sidecar schema this runtime reads and writes.
inline constexpr int64_t kSidecarSchema = 1;

// L2 markers.
inline constexpr std::string_view kCompiledMetaFile = "compiled_meta.json";
inline constexpr std::string_view kKernelConfigFile = "kernel_config.json";
// L3 markers.
inline constexpr std::string_view kDistributedMetaFile = "distributed_meta.json";
inline constexpr std::string_view kHostOrchFile = "orchestration/host_orch.json";

inline constexpr std::string_view kOrchestrationDir = "orchestration";
inline constexpr std::string_view kKernelsDir = "kernels";
inline constexpr std::string_view kPtoasDir = "ptoas";
inline constexpr std::string_view kCacheDir = "cache";
inline constexpr std::string_view kGoldenDir = "golden";
inline constexpr std::string_view kGoldenFile = "golden/golden.json";
inline constexpr std::string_view kGoldenInputsDir = "golden/inputs";
inline constexpr std::string_view kGoldenExpectedDir = "golden/expected";
inline constexpr std::string_view kDebugRunner = "debug/run";
inline constexpr std::string_view kDfxOutputsDir = "dfx_outputs";
inline constexpr std::string_view kOutputsDir = "outputs";
inline constexpr std::string_view kReportDir = "report";
inline constexpr std::string_view kNextLevelsDir = "next_levels";

// The only chip runtime (kernel_config.json "runtime", distributed_config "runtime").
inline constexpr std::string_view kChipRuntime = "tensormap_and_ringbuffer";

// `dir` joined with a file of the layout, as shown in messages: the caller's
// spelling of the directory is kept ("build/x/kernel_config.json").
std::string sidecar_display(const fs::path& dir, std::string_view file);

// next_levels/<rank> of an L3 build directory.
fs::path next_level_dir(const fs::path& dir, int64_t rank);

// The directory a compile writes to: `dir` itself, or the L3 build above it
// when `dir` is a sub-build (<build>/next_levels/<r>).
fs::path compile_output_dir(const fs::path& dir);

// How to get a good file back, for every error about a file of `dir`.
std::string recompile_remedy(const fs::path& dir);

}  // namespace pypto
