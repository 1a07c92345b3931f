// Internal to the reference interpreter (reference_interpreter.h): the values
// a program computes with — scalars, tiles, views of global memory, windows —
// and how elements of every dtype are read, written and rounded.
//
// Rounding rule: an element of a floating dtype is held as a double whose
// value is exactly representable in that dtype; every operation computes in
// float (the C++ kernels' arithmetic) and rounds the result to the dtype
// (f16/bf16: round to nearest, ties to even); the reductions row_sum and
// matmul accumulate in double and round once (interp_tile_ops.h). Integer
// elements are held as int64 and wrap to their dtype's width (two's
// complement), bool is 0 or 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "pypto/dtype.h"
#include "pypto/tensor.h"

namespace pypto::compiler::interp {

// Thrown by value operations that know what went wrong but not where; the
// evaluator turns it into a ProgramError with the file:line:col of the construct.
class ValueError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ------------------------------------------------------------ element conversions

// IEEE binary16 and bfloat16 <-> float; float -> 16 bits rounds to nearest even,
// overflows to infinity and keeps NaN a NaN.
float f16_to_float(uint16_t bits);
uint16_t float_to_f16(float value);
float bf16_to_float(uint16_t bits);
uint16_t float_to_bf16(float value);

// A float value rounded to the floating dtype `dtype` (f32: unchanged).
double round_float(DType dtype, float value);
// An integer wrapped to the integer (or bool) dtype `dtype`, as a C++ conversion does.
int64_t wrap_int(DType dtype, int64_t value);
// A float converted to the integer (or bool) dtype: truncation toward zero; values
// outside the dtype's range saturate and NaN becomes 0 (C++ leaves both undefined).
int64_t float_to_int(DType dtype, double value);

// A scalar of the language: `int` (int64) or `float` (double).
using Number = std::variant<int64_t, double>;
double as_double(const Number& n);

// A scalar converted to an element of `dtype`: floats go through float (the C++
// kernels' scalar type) and are rounded to the dtype; integers wrap.
double float_element(DType dtype, const Number& n);  // floating dtype
int64_t int_element(DType dtype, const Number& n);   // integer or bool dtype

// One element of `dtype` in memory.
double read_float(const std::byte* p, DType dtype);
int64_t read_int(const std::byte* p, DType dtype);
void write_float(std::byte* p, DType dtype, double value);  // value representable in dtype
void write_int(std::byte* p, DType dtype, int64_t value);   // value in range of dtype

// ------------------------------------------------------------ tiles

// An on-chip tile: a small row-major array of one dtype. Immutable once built
// (operations make new tiles), so values share tiles freely.
struct Tile {
  DType dtype = DType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<double> f;   // floating dtypes: each value representable in dtype
  std::vector<int64_t> i;  // integer dtypes and bool

  Tile(DType dtype, int64_t rows, int64_t cols);  // zero-filled
  bool floating() const;
  int64_t size() const { return rows * cols; }
  // Element k as a number, whatever the dtype.
  double number(int64_t k) const {
    const auto at = static_cast<size_t>(k);
    return floating() ? f[at] : static_cast<double>(i[at]);
  }
};
using TilePtr = std::shared_ptr<const Tile>;

// ------------------------------------------------------------ global memory

// A view of global memory: a host tensor, a region of one, an intermediate, or
// one rank's copy of a window. Strides and the offset count elements from the
// first element of `storage`, which keeps the buffer alive.
struct TensorRef {
  Tensor storage;
  DType dtype = DType::kF32;
  Shape shape;
  Shape strides;
  int64_t offset = 0;
  // A view of a window's copy (an in-place parameter, `x: ... at w`): its
  // accesses take the world's lock like any window access.
  bool in_window = false;

  static TensorRef of(const Tensor& tensor);
  std::byte* element(const Shape& index) const;
  int64_t numel() const;
};

// Row-major over the region [offsets, offsets + extents) of `t`: calls f(element, k)
// for the k-th element. The region must lie inside `t` (the caller checked it).
template <class F>
void for_each_element(const TensorRef& t, const Shape& offsets, const Shape& extents, F&& f) {
  for (int64_t e : extents)
    if (e <= 0) return;
  const size_t n = extents.size();
  Shape index = offsets;
  for (int64_t k = 0;; ++k) {
    f(t.element(index), k);
    // Advance like an odometer, the last dimension fastest; done when it wraps around.
    size_t d = n;
    while (d > 0 && ++index[d - 1] == offsets[d - 1] + extents[d - 1]) {
      index[d - 1] = offsets[d - 1];
      --d;
    }
    if (d == 0) return;
  }
}

// The region as a rows x cols tile (the extents multiply to rows * cols).
TilePtr read_tile(const TensorRef& t, const Shape& offsets, const Shape& extents, int64_t rows,
                  int64_t cols);
// Writes `tile` row-major into the region; `add` adds it to what is there
// instead (in the element dtype; not for bool).
void write_tile(const TensorRef& t, const Shape& offsets, const Shape& extents, const Tile& tile,
                bool add);
// Copies the region of `src` at src_offsets into the region of `dst` at
// dst_offsets, both of `extents` and of one dtype. The two may overlap.
void copy_region(const TensorRef& dst, const Shape& dst_offsets, const TensorRef& src,
                 const Shape& src_offsets, const Shape& extents);

// ------------------------------------------------------------ values

// A window buffer: an index into the run's windows (interp_world.h).
struct WindowRef {
  int32_t id = -1;
};

// What an expression evaluates to. monostate: a call that returns nothing.
using Value = std::variant<std::monostate, int64_t, double, bool, TilePtr, TensorRef, WindowRef>;

}  // namespace pypto::compiler::interp
