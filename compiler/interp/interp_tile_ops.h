// Internal to the reference interpreter: the arithmetic of tiles — the vector
// builtins (elementwise with broadcast, exp sqrt neg, cast, row reductions),
// the cube builtin (matmul) and tile constructors. Pure functions of their
// operands, following the rounding rule of interp_values.h.
#pragma once

#include <cstdint>

#include "compiler/interp/interp_values.h"

namespace pypto::compiler::interp {

enum class BinaryOp { kAdd, kSub, kMul, kDiv, kMax, kMin };
enum class UnaryOp { kExp, kSqrt, kNeg };

// a op b, where b has a's shape, or is [rows, 1] (one value per row) or [1, cols]
// (one value per column). Integer division by zero throws ValueError.
TilePtr tile_binary(BinaryOp op, const Tile& a, const Tile& b);
// a op s, the scalar first converted to a's dtype.
TilePtr tile_binary(BinaryOp op, const Tile& a, const Number& s);
TilePtr tile_unary(UnaryOp op, const Tile& a);
TilePtr tile_cast(const Tile& a, DType dtype);
// [rows, cols] -> [rows, 1]. Sums accumulate in double (any order of the C++
// sum is within rounding of it) and round once to the dtype.
TilePtr tile_row_sum(const Tile& a);
TilePtr tile_row_max(const Tile& a);
// acc + a * b (acc may be null): f32 for floating or non-i8 operands, i32 for
// i8 operands; each dot product accumulates in double (int64 for i8) and rounds
// once, with the accumulator added before the rounding.
TilePtr tile_matmul(const Tile& a, const Tile& b, const Tile* acc);
TilePtr tile_full(DType dtype, int64_t rows, int64_t cols, const Number& value);

}  // namespace pypto::compiler::interp
