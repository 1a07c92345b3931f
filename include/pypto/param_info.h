// A tensor parameter of a program, as compiled_meta.json and
// distributed_meta.json record it: {"name", "direction", "shape", "dtype"}.
// Leaf module: depends on pypto/dtype.h only.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pypto/dtype.h"

namespace pypto {

// The sidecar readers' types (common/json_reader.h; not installed).
using Json = nlohmann::json;
class JsonObject;

enum class Direction { kIn, kOut, kInOut };

// "In", "Out", "InOut".
const char* direction_name(Direction direction);
std::optional<Direction> parse_direction(std::string_view name);

// Extent of a dynamic dimension in `shape`.
inline constexpr int64_t kDynamicExtent = -1;

struct ParamInfo {
  std::string name;
  Direction direction = Direction::kIn;
  std::vector<int64_t> shape;  // kDynamicExtent for a dynamic dimension
  DType dtype = DType::kF32;

  // Parses one parameter object and rejects unknown keys. The name must be an
  // identifier (it names golden/inputs/<name>.npy); extents are >= 0 or -1.
  static ParamInfo from_json(JsonObject& obj);
  Json to_json() const;

  bool is_input() const { return direction != Direction::kOut; }  // In or InOut
  bool is_output() const { return direction != Direction::kIn; }  // Out or InOut
  bool has_dynamic_shape() const;
  // Whether a value of `dtype` and `shape` fits: same dtype and rank, every static
  // extent equal (a dynamic extent takes any).
  bool accepts(DType value_dtype, const std::vector<int64_t>& value_shape) const;
  // Number of elements; nullopt when a dimension is dynamic.
  std::optional<int64_t> numel() const;
  // "f32[8, 1, 256]", with "?" for a dynamic extent; for messages.
  std::string type_string() const;

  bool operator==(const ParamInfo&) const = default;
};

// Reads the list `key` of `obj` as parameters; names must be unique.
std::vector<ParamInfo> parse_params(JsonObject& obj, const std::string& key);
Json params_to_json(const std::vector<ParamInfo>& params);

// The parameter called `name`, or nullptr.
const ParamInfo* find_param(const std::vector<ParamInfo>& params, std::string_view name);
// "a, b, c", for messages.
std::string param_names(const std::vector<ParamInfo>& params);

}  // namespace pypto
