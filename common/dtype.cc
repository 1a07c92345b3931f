#include "pypto/dtype.h"

#include <array>

namespace pypto {

namespace {
struct DTypeInfo {
  DType dtype;
  const char* name;
  size_t size;
};
constexpr std::array<DTypeInfo, 9> kDTypes{{
    {DType::kF32, "f32", 4},
    {DType::kF16, "f16", 2},
    {DType::kBF16, "bf16", 2},
    {DType::kI8, "i8", 1},
    {DType::kI16, "i16", 2},
    {DType::kI32, "i32", 4},
    {DType::kI64, "i64", 8},
    {DType::kU8, "u8", 1},
    {DType::kBool, "bool", 1},
}};
}  // namespace

const char* dtype_name(DType dtype) { return kDTypes[static_cast<int>(dtype)].name; }

size_t dtype_size(DType dtype) { return kDTypes[static_cast<int>(dtype)].size; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& info : kDTypes)
    if (name == info.name) return info.dtype;
  return std::nullopt;
}

const char* dtype_names() { return "f32, f16, bf16, i8, i16, i32, i64, u8, bool"; }

}  // namespace pypto
