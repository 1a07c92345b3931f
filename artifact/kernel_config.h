// kernel_config.json: a chip's orchestrations and kernels with their sources
// (docs/build-directory.md). Used by L2 builds and by every L3 sub-build
// (next_levels/<r>/).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_reader.h"

namespace pypto {

namespace fs = std::filesystem;

// The kind of one argument in a `signature`.
enum class ArgKind { kIn, kOut, kInOut, kWindow, kScalar };
// "In", "Out", "InOut", "Window", "Scalar".
const char* arg_kind_name(ArgKind kind);
std::optional<ArgKind> parse_arg_kind(std::string_view name);
inline bool is_tensor_kind(ArgKind kind) {
  return kind == ArgKind::kIn || kind == ArgKind::kOut || kind == ArgKind::kInOut;
}
// "[In, In, Out]", for messages.
std::string signature_string(const std::vector<ArgKind>& signature);

enum class CoreType { kAic, kAiv };
// "aic", "aiv": also the directory under kernels/.
const char* core_type_name(CoreType type);
std::optional<CoreType> parse_core_type(std::string_view name);

struct OrchestrationInfo {
  std::string name;
  std::string source;         // relative to the sub-build, under orchestration/
  std::string function_name;  // exported C symbol
  std::vector<ArgKind> signature;
  bool operator==(const OrchestrationInfo&) const = default;
};

struct KernelInfo {
  int64_t func_id = 0;
  std::string name;
  CoreType core_type = CoreType::kAiv;
  std::string source;  // relative to the sub-build, under kernels/<core_type>/
  std::vector<ArgKind> signature;
  bool operator==(const KernelInfo&) const = default;
};

struct KernelConfig {
  std::string runtime;  // tensormap_and_ringbuffer
  int64_t aicpu_thread_num = 1;
  std::vector<OrchestrationInfo> orchestrations;
  std::vector<KernelInfo> kernels;

  // Reads and validates <dir>/kernel_config.json, including that every
  // source exists inside `dir`; throws ArtifactError.
  static KernelConfig load(const fs::path& dir);
  // Validates a parsed document; sources are resolved against `dir`.
  static KernelConfig from_json(JsonObject& root, const fs::path& dir);
  Json to_json() const;
  // Writes <dir>/kernel_config.json atomically.
  void write(const fs::path& dir) const;

  const OrchestrationInfo* find_orchestration(std::string_view name) const;
  const KernelInfo* find_kernel(int64_t func_id) const;
  // "a, b", for messages.
  std::string orchestration_names() const;

  bool operator==(const KernelConfig&) const = default;
};

}  // namespace pypto
