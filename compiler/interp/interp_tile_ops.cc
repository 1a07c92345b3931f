#include "compiler/interp/interp_tile_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace pypto::compiler::interp {

namespace {

// One floating element: operands are exact floats, the operation is the C++
// kernel's float operation, the result is rounded to the dtype.
float float_op(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd:
      return a + b;
    case BinaryOp::kSub:
      return a - b;
    case BinaryOp::kMul:
      return a * b;
    case BinaryOp::kDiv:
      return a / b;
    case BinaryOp::kMax:
      return std::max(a, b);
    case BinaryOp::kMin:
      return std::min(a, b);
  }
  return 0.0f;
}

// One integer element, wrapped to the dtype as the C++ conversion back to it does.
int64_t int_op(BinaryOp op, DType dtype, int64_t a, int64_t b) {
  const auto ua = static_cast<uint64_t>(a);
  const auto ub = static_cast<uint64_t>(b);
  switch (op) {
    case BinaryOp::kAdd:
      return wrap_int(dtype, static_cast<int64_t>(ua + ub));
    case BinaryOp::kSub:
      return wrap_int(dtype, static_cast<int64_t>(ua - ub));
    case BinaryOp::kMul:
      return wrap_int(dtype, static_cast<int64_t>(ua * ub));
    case BinaryOp::kDiv:
      if (b == 0) throw ValueError("integer division by zero in 'div'");
      if (a == std::numeric_limits<int64_t>::min() && b == -1)
        throw ValueError("integer overflow in 'div' (the most negative i64 divided by -1)");
      return wrap_int(dtype, a / b);
    case BinaryOp::kMax:
      return std::max(a, b);
    case BinaryOp::kMin:
      return std::min(a, b);
  }
  return 0;
}

// b's element for a's element (r, c): b is a's shape, [rows, 1] or [1, cols].
size_t broadcast_index(const Tile& a, const Tile& b, int64_t r, int64_t c) {
  const int64_t br = b.rows == a.rows ? r : 0;
  const int64_t bc = b.cols == a.cols ? c : 0;
  return static_cast<size_t>(br * b.cols + bc);
}

}  // namespace

TilePtr tile_binary(BinaryOp op, const Tile& a, const Tile& b) {
  const bool fits = (b.rows == a.rows || b.rows == 1) && (b.cols == a.cols || b.cols == 1);
  if (!fits || a.dtype != b.dtype)
    throw ValueError("tile operands of different shapes or dtypes");  // the checker prevents it
  auto out = std::make_shared<Tile>(a.dtype, a.rows, a.cols);
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t c = 0; c < a.cols; ++c) {
      const auto k = static_cast<size_t>(r * a.cols + c);
      const size_t kb = broadcast_index(a, b, r, c);
      if (a.floating()) {
        out->f[k] = round_float(
            a.dtype, float_op(op, static_cast<float>(a.f[k]), static_cast<float>(b.f[kb])));
      } else {
        out->i[k] = int_op(op, a.dtype, a.i[k], b.i[kb]);
      }
    }
  }
  return out;
}

TilePtr tile_binary(BinaryOp op, const Tile& a, const Number& s) {
  Tile b(a.dtype, 1, 1);
  if (b.floating())
    b.f[0] = float_element(a.dtype, s);
  else
    b.i[0] = int_element(a.dtype, s);
  return tile_binary(op, a, b);
}

TilePtr tile_unary(UnaryOp op, const Tile& a) {
  auto out = std::make_shared<Tile>(a.dtype, a.rows, a.cols);
  for (size_t k = 0; k < static_cast<size_t>(a.size()); ++k) {
    if (a.floating()) {
      const auto x = static_cast<float>(a.f[k]);
      const float y = op == UnaryOp::kExp ? std::exp(x) : op == UnaryOp::kSqrt ? std::sqrt(x) : -x;
      out->f[k] = round_float(a.dtype, y);
    } else {
      if (op != UnaryOp::kNeg) throw ValueError("exp and sqrt need a floating-point tile");
      out->i[k] = wrap_int(a.dtype, static_cast<int64_t>(0 - static_cast<uint64_t>(a.i[k])));
    }
  }
  return out;
}

TilePtr tile_cast(const Tile& a, DType dtype) {
  auto out = std::make_shared<Tile>(dtype, a.rows, a.cols);
  for (size_t k = 0; k < static_cast<size_t>(a.size()); ++k) {
    if (out->floating()) {
      // float -> float rounds the float value; int -> float converts like static_cast<float>.
      out->f[k] = a.floating() ? round_float(dtype, static_cast<float>(a.f[k]))
                               : round_float(dtype, static_cast<float>(a.i[k]));
    } else {
      out->i[k] = a.floating() ? float_to_int(dtype, a.f[k]) : wrap_int(dtype, a.i[k]);
    }
  }
  return out;
}

TilePtr tile_row_sum(const Tile& a) {
  auto out = std::make_shared<Tile>(a.dtype, a.rows, 1);
  for (int64_t r = 0; r < a.rows; ++r) {
    const auto row = static_cast<size_t>(r * a.cols);
    if (a.floating()) {
      double sum = 0.0;
      for (int64_t c = 0; c < a.cols; ++c) sum += a.f[row + static_cast<size_t>(c)];
      out->f[static_cast<size_t>(r)] = round_float(a.dtype, static_cast<float>(sum));
    } else {
      uint64_t sum = 0;  // wraps like the dtype's own addition
      for (int64_t c = 0; c < a.cols; ++c)
        sum += static_cast<uint64_t>(a.i[row + static_cast<size_t>(c)]);
      out->i[static_cast<size_t>(r)] = wrap_int(a.dtype, static_cast<int64_t>(sum));
    }
  }
  return out;
}

TilePtr tile_row_max(const Tile& a) {
  auto out = std::make_shared<Tile>(a.dtype, a.rows, 1);
  for (int64_t r = 0; r < a.rows; ++r) {
    const auto row = static_cast<size_t>(r * a.cols);
    if (a.floating()) {
      double m = a.f[row];
      for (int64_t c = 1; c < a.cols; ++c) m = std::max(m, a.f[row + static_cast<size_t>(c)]);
      out->f[static_cast<size_t>(r)] = m;
    } else {
      int64_t m = a.i[row];
      for (int64_t c = 1; c < a.cols; ++c) m = std::max(m, a.i[row + static_cast<size_t>(c)]);
      out->i[static_cast<size_t>(r)] = m;
    }
  }
  return out;
}

TilePtr tile_matmul(const Tile& a, const Tile& b, const Tile* acc) {
  if (a.cols != b.rows) throw ValueError("matmul inner dimensions differ");  // checked statically
  const bool int8 = a.dtype == DType::kI8;
  const DType result = int8 ? DType::kI32 : DType::kF32;
  if (acc && (acc->dtype != result || acc->rows != a.rows || acc->cols != b.cols))
    throw ValueError("matmul accumulator of the wrong shape or dtype");
  auto out = std::make_shared<Tile>(result, a.rows, b.cols);
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t c = 0; c < b.cols; ++c) {
      const auto k_out = static_cast<size_t>(r * b.cols + c);
      if (int8) {
        uint64_t sum = acc ? static_cast<uint64_t>(acc->i[k_out]) : 0;
        for (int64_t k = 0; k < a.cols; ++k)
          sum += static_cast<uint64_t>(a.i[static_cast<size_t>(r * a.cols + k)] *
                                       b.i[static_cast<size_t>(k * b.cols + c)]);
        out->i[k_out] = wrap_int(result, static_cast<int64_t>(sum));
      } else {
        double sum = acc ? acc->f[k_out] : 0.0;
        for (int64_t k = 0; k < a.cols; ++k)
          sum += a.number(r * a.cols + k) * b.number(k * b.cols + c);
        out->f[k_out] = static_cast<float>(sum);
      }
    }
  }
  return out;
}

TilePtr tile_full(DType dtype, int64_t rows, int64_t cols, const Number& value) {
  auto out = std::make_shared<Tile>(dtype, rows, cols);
  if (out->floating())
    std::fill(out->f.begin(), out->f.end(), float_element(dtype, value));
  else
    std::fill(out->i.begin(), out->i.end(), int_element(dtype, value));
  return out;
}

}  // namespace pypto::compiler::interp
