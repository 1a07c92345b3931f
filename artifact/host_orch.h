// orchestration/host_orch.json: an L3 build's window buffers and dispatch
// plan (docs/build-directory.md). load() checks everything the file alone
// decides; DistributedCompiledProgram::from_dir checks it against
// distributed_meta.json (ranks < world_size, host parameters and their boxes)
// and against next_levels/<r>/kernel_config.json (program, signature).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_reader.h"
#include "pypto/dtype.h"
#include "pypto/param_info.h"
#include "pypto/scalar_param.h"

namespace pypto {

namespace fs = std::filesystem;

// A symmetric buffer of `bytes` on each member rank.
struct WindowInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // static extents >= 1
  int64_t bytes = 0;           // product(shape) * dtype_size(dtype)
  std::vector<int64_t> ranks;  // distinct, non-empty
  bool has_rank(int64_t rank) const;
  bool operator==(const WindowInfo&) const = default;
};

enum class HostArgKind { kHost, kWindow, kScalar };
// "host", "window", "scalar".
const char* host_arg_kind_name(HostArgKind kind);

// One argument of a dispatch; which fields are meaningful depends on `kind`.
struct HostArg {
  HostArgKind kind = HostArgKind::kHost;
  // kHost: a box of host parameter `param`.
  std::string param;
  std::vector<int64_t> offsets;
  std::vector<int64_t> shape;
  // kWindow: the window's name. kHost: empty, or the window whose local copy
  // holds the box's data during the dispatch (an in-place argument: the rank
  // writes In/InOut data into the window's first bytes instead of a buffer of
  // its own and reads Out/InOut data back from there; docs/build-directory.md).
  std::string window;
  // kScalar: a constant `value` (integers) or `float_value` (floats) of
  // `dtype`, or, when `param` is set, the run's value of the program's scalar
  // parameter `param` converted to `dtype` (the chip parameter's dtype).
  int64_t value = 0;
  double float_value = 0;
  DType dtype = DType::kI64;

  static HostArg host(std::string param, std::vector<int64_t> offsets, std::vector<int64_t> shape,
                      std::string in_window = "");
  static HostArg window_arg(std::string window);
  static HostArg scalar(int64_t value);
  static HostArg scalar_constant(const ScalarValue& value);
  static HostArg scalar_param(std::string param, DType dtype);
  ScalarValue scalar_constant_value() const;  // kScalar without `param`
  // kScalar: what the dispatch passes, in the kernel ABI's encoding
  // (ScalarValue::abi_bits). `values` are the run's values of `scalars`.
  int64_t scalar_bits(const std::vector<ScalarParam>& scalars,
                      const std::vector<ScalarValue>& values) const;
  bool operator==(const HostArg&) const = default;
};

struct Dispatch {
  int64_t rank = 0;
  std::string program;  // an orchestration of next_levels/<rank>/kernel_config.json
  std::vector<HostArg> args;
  bool operator==(const Dispatch&) const = default;
};

struct HostOrch {
  std::vector<WindowInfo> windows;
  // Host tensors of the plan that are not parameters (`tensor(...)` in a host
  // function): zero-filled per run, readable and writable by dispatches like
  // an InOut parameter, never written to outputs/. Optional in the file.
  std::vector<ParamInfo> intermediates;
  std::vector<Dispatch> dispatches;  // in order per rank, concurrent across ranks

  // Reads and validates <dir>/orchestration/host_orch.json; throws ArtifactError.
  static HostOrch load(const fs::path& dir);
  static HostOrch from_json(JsonObject& root);
  Json to_json() const;
  // Writes <dir>/orchestration/host_orch.json atomically.
  void write(const fs::path& dir) const;

  const WindowInfo* find_window(std::string_view name) const;
  const ParamInfo* find_intermediate(std::string_view name) const;
  // Indices into `dispatches` of rank `rank`'s dispatches, in execution order.
  std::vector<size_t> dispatches_of(int64_t rank) const;

  bool operator==(const HostOrch&) const = default;
};

}  // namespace pypto
