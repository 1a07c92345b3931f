#include "pypto/param_info.h"

#include <map>

#include "artifact/sidecar_checks.h"
#include "common/json_reader.h"

namespace pypto {

const char* direction_name(Direction direction) {
  switch (direction) {
    case Direction::kIn:
      return "In";
    case Direction::kOut:
      return "Out";
    case Direction::kInOut:
      return "InOut";
  }
  return "?";
}

std::optional<Direction> parse_direction(std::string_view name) {
  if (name == "In") return Direction::kIn;
  if (name == "Out") return Direction::kOut;
  if (name == "InOut") return Direction::kInOut;
  return std::nullopt;
}

ParamInfo ParamInfo::from_json(JsonObject& obj) {
  ParamInfo p;
  p.name = obj.string("name");
  if (p.name.empty()) obj.fail("name", "is empty");
  if (!is_c_identifier(p.name))
    obj.fail("name", "'" + p.name + "' is not an identifier ([A-Za-z_][A-Za-z0-9_]*); it names " +
                         "the parameter's golden/*.npy files");
  std::string direction = obj.string("direction");
  auto d = parse_direction(direction);
  if (!d)
    obj.fail("direction", "'" + direction + "' is not a direction; expected In, Out or InOut");
  p.direction = *d;
  p.shape = obj.integers("shape");
  for (size_t i = 0; i < p.shape.size(); ++i)
    if (p.shape[i] < 0 && p.shape[i] != kDynamicExtent)
      obj.fail("shape", "extent " + std::to_string(i) + " is " + std::to_string(p.shape[i]) +
                            "; extents are >= 0, or -1 for a dynamic one");
  std::string dtype = obj.string("dtype");
  auto t = parse_dtype(dtype);
  if (!t) obj.fail("dtype", "'" + dtype + "' is not a dtype; expected one of " + dtype_names());
  p.dtype = *t;
  obj.reject_unknown_keys();
  return p;
}

Json ParamInfo::to_json() const {
  return Json{{"name", name},
              {"direction", direction_name(direction)},
              {"shape", shape},
              {"dtype", dtype_name(dtype)}};
}

bool ParamInfo::has_dynamic_shape() const {
  for (int64_t e : shape)
    if (e == kDynamicExtent) return true;
  return false;
}

bool ParamInfo::accepts(DType value_dtype, const std::vector<int64_t>& value_shape) const {
  if (value_dtype != dtype || value_shape.size() != shape.size()) return false;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != kDynamicExtent && shape[d] != value_shape[d]) return false;
  return true;
}

std::optional<int64_t> ParamInfo::numel() const {
  int64_t n = 1;
  for (int64_t e : shape) {
    if (e == kDynamicExtent) return std::nullopt;
    n *= e;
  }
  return n;
}

std::string ParamInfo::type_string() const {
  std::string s = std::string(dtype_name(dtype)) + "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += shape[i] == kDynamicExtent ? std::string("?") : std::to_string(shape[i]);
  }
  return s + "]";
}

std::vector<ParamInfo> parse_params(JsonObject& obj, const std::string& key) {
  std::vector<ParamInfo> params;
  std::map<std::string, std::string> seen;  // name -> field path of its first use
  for (JsonObject& entry : obj.objects(key)) {
    ParamInfo p = ParamInfo::from_json(entry);
    auto [it, inserted] = seen.emplace(p.name, entry.field_path(""));
    if (!inserted)
      entry.fail("name", "'" + p.name + "' is already used by " + it->second +
                             "; parameter names must be unique");
    params.push_back(std::move(p));
  }
  return params;
}

Json params_to_json(const std::vector<ParamInfo>& params) {
  Json list = Json::array();
  for (const auto& p : params) list.push_back(p.to_json());
  return list;
}

const ParamInfo* find_param(const std::vector<ParamInfo>& params, std::string_view name) {
  for (const auto& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

std::string param_names(const std::vector<ParamInfo>& params) {
  std::string s;
  for (const auto& p : params) s += (s.empty() ? "" : ", ") + p.name;
  return s.empty() ? std::string("none") : s;
}

}  // namespace pypto
