// The types the checker gives expressions. Shapes are always static: every
// extent is a compile-time constant, which is what lets the checker size
// tiles against the on-chip buffers and lets later stages emit fixed-size
// .pto tiles.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pypto/dtype.h"

namespace pypto::compiler {

enum class Direction { kIn, kOut, kInOut };
const char* direction_name(Direction dir);  // "in", "out", "inout"

enum class TypeKind {
  kError,    // already reported; silences follow-up errors
  kVoid,     // a call that returns nothing
  kInt,      // integer scalar (indices, ranks, i8..i64 scalar params)
  kFloat,    // floating-point scalar
  kBool,     // comparisons, conditions
  kTile,     // an on-chip tile: dtype, [rows, cols]
  kTensor,   // a tensor view in global memory: direction, dtype, shape
  kWindow,   // a window buffer: dtype, per-rank shape
  kDType,    // a bare dtype as an argument: cast(x, f16)
  kTypeLit,  // a type as an argument: zeros(f32[16, 16])
  kList,     // [a, b, ...]: offsets and shapes
  kSymbol,   // a bare name read as an option: add, ge, sum
};

struct Type {
  TypeKind kind = TypeKind::kError;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  Direction dir = Direction::kIn;

  static Type error() { return Type{}; }
  static Type of(TypeKind kind) { return Type{kind, DType::kF32, {}, Direction::kIn}; }
  static Type tile(DType dtype, int64_t rows, int64_t cols) {
    return Type{TypeKind::kTile, dtype, {rows, cols}, Direction::kIn};
  }
  bool is_error() const { return kind == TypeKind::kError; }
  bool is_scalar() const { return kind == TypeKind::kInt || kind == TypeKind::kFloat; }
  // Elements times element size; saturates instead of overflowing.
  int64_t bytes() const;
  bool operator==(const Type&) const = default;
};

// "f32[1, 256]" for a shape with a dtype.
std::string shape_string(DType dtype, const std::vector<int64_t>& shape);
// How a type reads in messages: "int", "f32 tile[16, 64]", "in tensor f32[1, 256]",
// "window i32[8, 1]".
std::string to_string(const Type& type);

bool is_float_dtype(DType dtype);

// "a window f32[4]", "an int", "an f32 tile[16, 64]": the article as the words are spoken.
std::string with_article(const std::string& words);

}  // namespace pypto::compiler
