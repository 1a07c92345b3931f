#include "pypto/scalar_param.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>

#include "artifact/sidecar_checks.h"
#include "common/json_reader.h"
#include "pypto/error.h"

namespace pypto {

namespace {

// The range of an integer dtype.
std::pair<int64_t, int64_t> int_range(DType dtype) {
  switch (dtype) {
    case DType::kI8:
      return {INT8_MIN, INT8_MAX};
    case DType::kI16:
      return {INT16_MIN, INT16_MAX};
    case DType::kI32:
      return {INT32_MIN, INT32_MAX};
    case DType::kU8:
      return {0, UINT8_MAX};
    case DType::kBool:
      return {0, 1};
    default:
      return {INT64_MIN, INT64_MAX};
  }
}

int64_t wrap(DType dtype, int64_t v) {
  switch (dtype) {
    case DType::kI8:
      return static_cast<int8_t>(v);
    case DType::kI16:
      return static_cast<int16_t>(v);
    case DType::kI32:
      return static_cast<int32_t>(v);
    case DType::kU8:
      return static_cast<uint8_t>(v);
    case DType::kBool:
      return v != 0;
    default:
      return v;
  }
}

// `v` rounded to the floating dtype through float (as the reference
// interpreter and the kernels convert), as a double (exact): nearest, ties to even.
double round_to(DType dtype, double v) {
  const float f = static_cast<float>(v);
  if (dtype == DType::kF16) return static_cast<float>(static_cast<_Float16>(f));
  if (dtype == DType::kBF16) {
    uint32_t x = 0;
    std::memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u) return f;  // NaN stays NaN
    x = ((x + 0x7fffu + ((x >> 16) & 1u)) >> 16) << 16;
    float r = 0;
    std::memcpy(&r, &x, sizeof r);
    return r;
  }
  return f;
}

}  // namespace

bool is_floating_dtype(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}

int64_t ScalarValue::abi_bits() const {
  if (!is_float()) return wrap(dtype, i);
  const float value = static_cast<float>(round_to(dtype, f));
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return static_cast<int64_t>(bits);
}

ScalarValue ScalarValue::converted_to(DType to) const {
  ScalarValue v;
  v.dtype = to;
  if (is_floating_dtype(to)) {
    v.f = round_to(to, is_float() ? f : static_cast<double>(i));
  } else {
    v.i = wrap(to, is_float() ? static_cast<int64_t>(f) : i);
  }
  return v;
}

std::string ScalarValue::text() const {
  if (!is_float()) return std::to_string(i);
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f < 0 ? "-inf" : "inf";
  // The shortest decimal that reads back as the dtype's value: f16/bf16 and
  // f32 values go through float, so 0.1 prints as 0.1, not 0.100000001490116.
  char buf[64];
  const float as_float = static_cast<float>(f);
  auto r = static_cast<double>(as_float) == f
               ? std::to_chars(buf, buf + sizeof buf, as_float)
               : std::to_chars(buf, buf + sizeof buf, f);
  return std::string(buf, r.ptr);
}

Json ScalarValue::to_json() const {
  if (!is_float()) return Json(i);
  if (std::isfinite(f)) return Json(std::stod(text()));
  return Json(text());  // JSON has no infinities or NaN: "inf", "-inf", "nan"
}

ScalarValue parse_scalar_value(DType dtype, std::string_view text, const std::string& what) {
  ScalarValue v;
  v.dtype = dtype;
  const std::string s(text);
  if (is_floating_dtype(dtype)) {
    char* end = nullptr;
    const double d = s.empty() ? 0 : std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || std::isspace(static_cast<unsigned char>(s[0])))
      throw UsageError(what + ": '" + s + "' is not a number; " + dtype_name(dtype) +
                       " takes a number such as 2.5, -1e-3 or inf");
    v.f = round_to(dtype, d);
    if (std::isinf(v.f) && std::isfinite(d))
      throw UsageError(what + ": " + s + " is outside the range of " + dtype_name(dtype) +
                       " (it would round to infinity)");
    return v;
  }
  if (dtype == DType::kBool && (s == "true" || s == "false")) {
    v.i = s == "true";
    return v;
  }
  int64_t parsed = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), parsed);
  const auto [lo, hi] = int_range(dtype);
  const std::string range = std::to_string(lo) + " .. " + std::to_string(hi);
  if (s.empty() || ptr != s.data() + s.size() || (ec != std::errc() && ec != std::errc::result_out_of_range))
    throw UsageError(what + ": '" + s + "' is not an integer; " + dtype_name(dtype) +
                     " takes an integer in " + range);
  if (ec == std::errc::result_out_of_range || parsed < lo || parsed > hi)
    throw UsageError(what + ": " + s + " is outside the range of " + dtype_name(dtype) + " (" +
                     range + ")");
  v.i = parsed;
  return v;
}

ScalarParam ScalarParam::from_json(JsonObject& obj) {
  ScalarParam p;
  p.name = obj.string("name");
  if (!is_c_identifier(p.name))
    obj.fail("name", "'" + p.name + "' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)");
  const std::string dtype = obj.string("dtype");
  const auto t = parse_dtype(dtype);
  if (!t) obj.fail("dtype", "'" + dtype + "' is not a dtype; expected one of " + dtype_names());
  const Json& value = obj.raw("value");
  std::string text;
  if (value.is_number_integer()) {
    text = value.dump();
  } else if (value.is_number() && is_floating_dtype(*t)) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, value.get<double>());
    text.assign(buf, r.ptr);
  } else if (value.is_string() && is_floating_dtype(*t)) {
    text = value.get<std::string>();
  } else {
    obj.fail("value", std::string("must be ") +
                          (is_floating_dtype(*t) ? "a number (or \"inf\", \"-inf\", \"nan\")"
                                                 : "an integer") +
                          " for a " + dtype + " scalar");
  }
  try {
    p.value = parse_scalar_value(*t, text, "value");
  } catch (const UsageError& e) {
    obj.fail("value", e.what());
  }
  obj.reject_unknown_keys();
  return p;
}

Json ScalarParam::to_json() const {
  return Json{{"name", name}, {"dtype", dtype_name(dtype())}, {"value", value.to_json()}};
}

std::vector<ScalarParam> parse_scalar_params(JsonObject& obj, const std::string& key) {
  std::vector<ScalarParam> out;
  if (!obj.has(key)) return out;
  std::set<std::string> names;
  for (JsonObject& o : obj.objects(key)) {
    ScalarParam p = ScalarParam::from_json(o);
    if (!names.insert(p.name).second) o.fail("name", "'" + p.name + "' is listed twice");
    out.push_back(std::move(p));
  }
  return out;
}

Json scalar_params_to_json(const std::vector<ScalarParam>& scalars) {
  Json list = Json::array();
  for (const ScalarParam& s : scalars) list.push_back(s.to_json());
  return list;
}

const ScalarParam* find_scalar(const std::vector<ScalarParam>& scalars, std::string_view name) {
  for (const ScalarParam& s : scalars)
    if (s.name == name) return &s;
  return nullptr;
}

std::vector<ScalarValue> scalar_values(const std::vector<ScalarParam>& scalars,
                                       const std::vector<std::string>& overrides) {
  std::vector<ScalarValue> values;
  for (const ScalarParam& s : scalars) values.push_back(s.value);
  for (const std::string& spec : overrides) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw UsageError("--scalar " + spec + ": expected NAME=VALUE");
    const std::string name = spec.substr(0, eq);
    size_t index = scalars.size();
    for (size_t k = 0; k < scalars.size(); ++k)
      if (scalars[k].name == name) index = k;
    if (index == scalars.size()) {
      std::string names;
      for (const ScalarParam& s : scalars) names += (names.empty() ? "" : ", ") + s.name;
      throw UsageError("--scalar " + spec + ": the program has no scalar parameter '" + name +
                       "' (its scalar parameters: " + (names.empty() ? "none" : names) + ")");
    }
    values[index] = parse_scalar_value(scalars[index].dtype(), spec.substr(eq + 1), "--scalar " + spec);
  }
  return values;
}

}  // namespace pypto
