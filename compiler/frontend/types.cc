#include "compiler/frontend/types.h"

#include <limits>

namespace pypto::compiler {

const char* direction_name(Direction dir) {
  switch (dir) {
    case Direction::kIn:
      return "in";
    case Direction::kOut:
      return "out";
    case Direction::kInOut:
      return "inout";
  }
  return "in";
}

int64_t Type::bytes() const {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t n = static_cast<int64_t>(dtype_size(dtype));
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return kMax;
  }
  return n;
}

std::string shape_string(DType dtype, const std::vector<int64_t>& shape) {
  std::string s = dtype_name(dtype);
  s += "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::string to_string(const Type& type) {
  switch (type.kind) {
    case TypeKind::kError:
      return "<error>";
    case TypeKind::kVoid:
      return "nothing";
    case TypeKind::kInt:
      return "int";
    case TypeKind::kFloat:
      return "float";
    case TypeKind::kBool:
      return "bool";
    case TypeKind::kTile:
      return std::string(dtype_name(type.dtype)) + " tile" +
             shape_string(type.dtype, type.shape)
                 .substr(std::string(dtype_name(type.dtype)).size());
    case TypeKind::kTensor:
      return std::string(direction_name(type.dir)) + " tensor " +
             shape_string(type.dtype, type.shape);
    case TypeKind::kWindow:
      return "window " + shape_string(type.dtype, type.shape);
    case TypeKind::kDType:
      return std::string("dtype ") + dtype_name(type.dtype);
    case TypeKind::kTypeLit:
      return "type " + shape_string(type.dtype, type.shape);
    case TypeKind::kList:
      return "list";
    case TypeKind::kSymbol:
      return "option name";
  }
  return "<error>";
}

std::string with_article(const std::string& words) {
  const size_t i = words.find_first_not_of('\'');  // "'out' parameter" reads "an out ..."
  const char c = i < words.size() ? words[i] : 'x';
  const bool vowel =
      c == 'a' || c == 'e' || c == 'i' || c == 'o' ||
      (c == 'f' && i + 1 < words.size() && words[i + 1] >= '0' && words[i + 1] <= '9');
  return (vowel ? "an " : "a ") + words;
}

bool is_float_dtype(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}

}  // namespace pypto::compiler
