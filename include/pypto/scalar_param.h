// A scalar parameter of a program (`alpha: f32` of the entry function), as
// compiled_meta.json and distributed_meta.json record it in `scalars`:
// {"name", "dtype", "value"}. `value` is the default a run uses when no
// --scalar NAME=VALUE is given, and the value the golden data was computed
// with. Leaf module: depends on common/ and the kernel ABI headers only.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "pypto/dtype.h"

namespace pypto {

// The sidecar readers' types (common/json_reader.h; not installed).
using Json = nlohmann::json;
class JsonObject;

// f32, f16, bf16.
bool is_floating_dtype(DType dtype);

// One scalar value of a dtype: integers (i8..i64, u8, bool) in `i`, floats in `f`.
struct ScalarValue {
  DType dtype = DType::kI64;
  int64_t i = 0;
  double f = 0;

  bool is_float() const { return is_floating_dtype(dtype); }
  // The value as the kernel ABI carries it in an int64_t scalar slot: an
  // integer wrapped to its dtype's width; a float rounded to its dtype (f16 and
  // bf16 values are exact in f32) and sent as the f32 bit pattern in the low
  // 32 bits (docs/pto-format.md).
  int64_t abi_bits() const;
  // This value converted to `dtype` as the language converts a scalar passed
  // to a parameter: integers to floats exactly, floats to floats rounded; an
  // integer dtype accepts integers only (wrapped to its width).
  ScalarValue converted_to(DType dtype) const;
  // Shortest text that reads back as the same value ("2.5", "0.1", "-3").
  std::string text() const;
  Json to_json() const;

  bool operator==(const ScalarValue&) const = default;
};

// `text` read as a value of `dtype`: a decimal integer within the dtype's
// range for integer dtypes (bool: 0, 1, true, false), a number (`2.5`, `1e-3`,
// `-inf`, `nan`) for float dtypes, rounded to the dtype (f32: to nearest
// float; f16/bf16: nearest, ties to even). Throws UsageError naming `what`
// ("--scalar alpha=x") and the accepted range.
ScalarValue parse_scalar_value(DType dtype, std::string_view text, const std::string& what);

struct ScalarParam {
  std::string name;
  ScalarValue value;  // its dtype is the parameter's

  DType dtype() const { return value.dtype; }
  // Parses {"name", "dtype", "value"} and rejects unknown keys.
  static ScalarParam from_json(JsonObject& obj);
  Json to_json() const;
  bool operator==(const ScalarParam&) const = default;
};

// The optional list `key` of `obj` (absent: none); names must be unique.
std::vector<ScalarParam> parse_scalar_params(JsonObject& obj, const std::string& key);
Json scalar_params_to_json(const std::vector<ScalarParam>& scalars);

// The parameter called `name`, or nullptr.
const ScalarParam* find_scalar(const std::vector<ScalarParam>& scalars, std::string_view name);

// The values a run passes for `scalars`: each parameter's recorded default,
// replaced by the NAME=VALUE entries of `overrides` (--scalar). Throws
// UsageError for a malformed entry, a name that is no scalar parameter
// (listing them) or a value out of range.
std::vector<ScalarValue> scalar_values(const std::vector<ScalarParam>& scalars,
                                       const std::vector<std::string>& overrides);

}  // namespace pypto
