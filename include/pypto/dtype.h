// Element types shared by sidecars, tensors, .npy files and the kernel ABI.
// The numeric values equal pypto_dtype in include/pypto/kernel_abi.h.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace pypto {

enum class DType : int { kF32 = 0, kF16 = 1, kBF16 = 2, kI8 = 3, kI16 = 4, kI32 = 5, kI64 = 6,
                         kU8 = 7, kBool = 8 };

// Sidecar / language names: f32 f16 bf16 i8 i16 i32 i64 u8 bool.
const char* dtype_name(DType dtype);
std::optional<DType> parse_dtype(std::string_view name);
// "f32, f16, bf16, i8, i16, i32, i64, u8, bool", for error messages.
const char* dtype_names();
size_t dtype_size(DType dtype);

}  // namespace pypto
