#include "compiler/interp/interp_values.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "compiler/frontend/types.h"

namespace pypto::compiler::interp {

// ------------------------------------------------------------ element conversions

float f16_to_float(uint16_t bits) {
  const uint32_t sign = (bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

uint16_t float_to_f16(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t magnitude = x & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) {  // infinity, or NaN (kept quiet and non-zero)
    if (magnitude == 0x7f800000u) return sign | 0x7c00u;
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
  if (magnitude >= 0x47800000u) return sign | 0x7c00u;  // >= 2^16: infinity
  const uint32_t exponent = magnitude >> 23;            // biased, float
  const uint32_t mantissa = magnitude & 0x7fffffu;
  if (exponent < 113) {
    // Below 2^-14: an f16 subnormal, in units of 2^-24. The value is
    // (2^23 + mantissa) * 2^(exponent - 150), i.e. that integer >> (126 - exponent) units.
    if (exponent == 0) return sign;  // float subnormals are far below 2^-25
    const uint32_t shift = 126 - exponent;
    if (shift > 24) return sign;  // below half the smallest subnormal
    const uint32_t full = mantissa | 0x800000u;
    uint32_t q = full >> shift;
    const uint32_t rest = full & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (q & 1u))) ++q;  // may carry into the smallest normal
    return static_cast<uint16_t>(sign | q);
  }
  // Normal: rebias the exponent, keep 10 mantissa bits, round the 13 dropped ones.
  uint32_t h = ((exponent - 127 + 15) << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry may reach infinity
  return static_cast<uint16_t>(sign | h);
}

float bf16_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

uint16_t float_to_bf16(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
  const uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);  // nearest, ties to even
  return static_cast<uint16_t>(rounded >> 16);
}

double round_float(DType dtype, float value) {
  switch (dtype) {
    case DType::kF16:
      return f16_to_float(float_to_f16(value));
    case DType::kBF16:
      return bf16_to_float(float_to_bf16(value));
    default:
      return value;
  }
}

int64_t wrap_int(DType dtype, int64_t value) {
  switch (dtype) {
    case DType::kI8:
      return static_cast<int8_t>(value);
    case DType::kI16:
      return static_cast<int16_t>(value);
    case DType::kI32:
      return static_cast<int32_t>(value);
    case DType::kU8:
      return static_cast<uint8_t>(value);
    case DType::kBool:
      return value != 0 ? 1 : 0;
    default:
      return value;
  }
}

namespace {
template <class T>
int64_t saturate(double value) {
  if (std::isnan(value)) return 0;
  const double t = std::trunc(value);
  if (t <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  // Compare against 2^(bits) as a double: the max itself may not be representable.
  if (t >= std::ldexp(1.0, std::numeric_limits<T>::digits)) return std::numeric_limits<T>::max();
  return static_cast<int64_t>(t);
}
}  // namespace

int64_t float_to_int(DType dtype, double value) {
  switch (dtype) {
    case DType::kI8:
      return saturate<int8_t>(value);
    case DType::kI16:
      return saturate<int16_t>(value);
    case DType::kI32:
      return saturate<int32_t>(value);
    case DType::kU8:
      return saturate<uint8_t>(value);
    case DType::kBool:
      return value != 0.0 ? 1 : 0;  // NaN != 0: true, as in C++
    default:
      return saturate<int64_t>(value);
  }
}

double as_double(const Number& n) {
  if (const auto* i = std::get_if<int64_t>(&n)) return static_cast<double>(*i);
  return std::get<double>(n);
}

double float_element(DType dtype, const Number& n) {
  if (const auto* i = std::get_if<int64_t>(&n)) return round_float(dtype, static_cast<float>(*i));
  return round_float(dtype, static_cast<float>(std::get<double>(n)));
}

int64_t int_element(DType dtype, const Number& n) {
  if (const auto* i = std::get_if<int64_t>(&n)) return wrap_int(dtype, *i);
  return float_to_int(dtype, std::get<double>(n));
}

namespace {
template <class T>
T load_as(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
void store_as(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof v);
}
}  // namespace

double read_float(const std::byte* p, DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return f16_to_float(load_as<uint16_t>(p));
    case DType::kBF16:
      return bf16_to_float(load_as<uint16_t>(p));
    default:
      return load_as<float>(p);
  }
}

int64_t read_int(const std::byte* p, DType dtype) {
  switch (dtype) {
    case DType::kI8:
      return load_as<int8_t>(p);
    case DType::kI16:
      return load_as<int16_t>(p);
    case DType::kI32:
      return load_as<int32_t>(p);
    case DType::kU8:
      return load_as<uint8_t>(p);
    case DType::kBool:
      return load_as<uint8_t>(p) != 0 ? 1 : 0;
    default:
      return load_as<int64_t>(p);
  }
}

void write_float(std::byte* p, DType dtype, double value) {
  switch (dtype) {
    case DType::kF16:
      return store_as<uint16_t>(p, float_to_f16(static_cast<float>(value)));
    case DType::kBF16:
      return store_as<uint16_t>(p, float_to_bf16(static_cast<float>(value)));
    default:
      return store_as<float>(p, static_cast<float>(value));
  }
}

void write_int(std::byte* p, DType dtype, int64_t value) {
  switch (dtype) {
    case DType::kI8:
      return store_as<int8_t>(p, static_cast<int8_t>(value));
    case DType::kI16:
      return store_as<int16_t>(p, static_cast<int16_t>(value));
    case DType::kI32:
      return store_as<int32_t>(p, static_cast<int32_t>(value));
    case DType::kU8:
    case DType::kBool:
      return store_as<uint8_t>(p, static_cast<uint8_t>(value));
    default:
      return store_as<int64_t>(p, value);
  }
}

// ------------------------------------------------------------ tiles

Tile::Tile(DType dtype_, int64_t rows_, int64_t cols_) : dtype(dtype_), rows(rows_), cols(cols_) {
  if (floating())
    f.assign(static_cast<size_t>(rows * cols), 0.0);
  else
    i.assign(static_cast<size_t>(rows * cols), 0);
}

bool Tile::floating() const { return is_float_dtype(dtype); }

// ------------------------------------------------------------ global memory

TensorRef TensorRef::of(const Tensor& tensor) {
  TensorRef r;
  r.storage = tensor;
  r.dtype = tensor.dtype();
  r.shape = tensor.shape();
  r.strides = tensor.strides();
  r.offset = 0;
  return r;
}

std::byte* TensorRef::element(const Shape& index) const {
  int64_t at = offset;
  for (size_t d = 0; d < index.size(); ++d) at += index[d] * strides[d];
  return static_cast<std::byte*>(const_cast<void*>(storage.data())) +
         at * static_cast<int64_t>(dtype_size(dtype));
}

int64_t TensorRef::numel() const {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return n;
}

TilePtr read_tile(const TensorRef& t, const Shape& offsets, const Shape& extents, int64_t rows,
                  int64_t cols) {
  auto tile = std::make_shared<Tile>(t.dtype, rows, cols);
  if (tile->floating()) {
    for_each_element(t, offsets, extents, [&](const std::byte* p, int64_t k) {
      tile->f[static_cast<size_t>(k)] = read_float(p, t.dtype);
    });
  } else {
    for_each_element(t, offsets, extents, [&](const std::byte* p, int64_t k) {
      tile->i[static_cast<size_t>(k)] = read_int(p, t.dtype);
    });
  }
  return tile;
}

void write_tile(const TensorRef& t, const Shape& offsets, const Shape& extents, const Tile& tile,
                bool add) {
  if (add && t.dtype == DType::kBool)
    throw ValueError("an atomic add needs a numeric dtype, not bool");
  if (tile.floating()) {
    for_each_element(t, offsets, extents, [&](std::byte* p, int64_t k) {
      double v = tile.f[static_cast<size_t>(k)];
      if (add)
        v = round_float(t.dtype,
                        static_cast<float>(read_float(p, t.dtype)) + static_cast<float>(v));
      write_float(p, t.dtype, v);
    });
  } else {
    for_each_element(t, offsets, extents, [&](std::byte* p, int64_t k) {
      int64_t v = tile.i[static_cast<size_t>(k)];
      if (add) {
        // Two's complement wrap-around, as the runtime's atomic fetch_add.
        const uint64_t sum = static_cast<uint64_t>(read_int(p, t.dtype)) + static_cast<uint64_t>(v);
        v = wrap_int(t.dtype, static_cast<int64_t>(sum));
      }
      write_int(p, t.dtype, v);
    });
  }
}

void copy_region(const TensorRef& dst, const Shape& dst_offsets, const TensorRef& src,
                 const Shape& src_offsets, const Shape& extents) {
  // Through a buffer, so an overlapping copy (a window put to itself) reads before it writes.
  const size_t esize = dtype_size(src.dtype);
  std::vector<std::byte> buffer;
  for_each_element(src, src_offsets, extents,
                   [&](const std::byte* p, int64_t) { buffer.insert(buffer.end(), p, p + esize); });
  for_each_element(dst, dst_offsets, extents, [&](std::byte* p, int64_t k) {
    std::memcpy(p, buffer.data() + static_cast<size_t>(k) * esize, esize);
  });
}

}  // namespace pypto::compiler::interp
