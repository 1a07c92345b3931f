#include "rank_agent/atomics.h"

#include <bit>
#include <cmath>
#include <cstring>

#include "pypto/error.h"
#include "pypto/kernel_abi.h"

namespace pypto::rank {

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in float.
    const float magnitude = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

uint16_t f32_to_f16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t exp = (x >> 23) & 0xff;
  uint32_t mant = x & 0x7fffff;
  if (exp == 0xff)  // inf, or NaN kept quiet
    return sign | 0x7c00 | (mant ? 0x200 | (mant >> 13) : 0);
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal half: value * 2^24 = M >> (14 - e), M with the implicit bit.
    if (e < -10) return sign;
    const uint32_t m = mant | 0x800000;
    const int shift = 14 - e;
    uint32_t h = m >> shift;
    const uint32_t rest = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (h & 1))) ++h;  // may carry into the first normal
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // a carry may round up to inf
  return static_cast<uint16_t>(sign | h);
}

float bf16_to_f32(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

uint16_t f32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);
  return static_cast<uint16_t>((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

uint16_t add_f16_bits(uint16_t old_bits, uint16_t add_bits, DType dtype) {
  if (dtype == DType::kBF16) return f32_to_bf16(bf16_to_f32(old_bits) + bf16_to_f32(add_bits));
  return f32_to_f16(f16_to_f32(old_bits) + f16_to_f32(add_bits));
}

std::optional<std::string> atomic_add_unsupported(DType dtype) {
  if (dtype == DType::kBool)
    return std::string("atomic add is not defined for bool; store with PYPTO_STORE_SET");
  return std::nullopt;
}

namespace {

template <typename T>
void add_integers(void* dst, const void* src, uint64_t count) {
  T* out = static_cast<T*>(dst);
  const char* in = static_cast<const char*>(src);
  for (uint64_t i = 0; i < count; ++i) {
    T value;
    std::memcpy(&value, in + i * sizeof(T), sizeof(T));
    __atomic_fetch_add(out + i, value, __ATOMIC_SEQ_CST);
  }
}

void add_f32(void* dst, const void* src, uint64_t count) {
  uint32_t* out = static_cast<uint32_t*>(dst);
  const char* in = static_cast<const char*>(src);
  for (uint64_t i = 0; i < count; ++i) {
    float add;
    std::memcpy(&add, in + i * 4, 4);
    uint32_t old = __atomic_load_n(out + i, __ATOMIC_RELAXED);
    uint32_t next;
    do {
      next = std::bit_cast<uint32_t>(std::bit_cast<float>(old) + add);
    } while (!__atomic_compare_exchange_n(out + i, &old, next, /*weak=*/true, __ATOMIC_SEQ_CST,
                                          __ATOMIC_RELAXED));
  }
}

void add_half(void* dst, const void* src, uint64_t count, DType dtype) {
  uint16_t* out = static_cast<uint16_t*>(dst);
  const char* in = static_cast<const char*>(src);
  for (uint64_t i = 0; i < count; ++i) {
    uint16_t add;
    std::memcpy(&add, in + i * 2, 2);
    uint16_t old = __atomic_load_n(out + i, __ATOMIC_RELAXED);
    uint16_t next;
    do {
      next = add_f16_bits(old, add, dtype);
    } while (!__atomic_compare_exchange_n(out + i, &old, next, /*weak=*/true, __ATOMIC_SEQ_CST,
                                          __ATOMIC_RELAXED));
  }
}

}  // namespace

void atomic_add(void* dst, const void* src, uint64_t count, DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return add_f32(dst, src, count);
    case DType::kF16:
    case DType::kBF16:
      return add_half(dst, src, count, dtype);
    case DType::kI8:
      return add_integers<int8_t>(dst, src, count);
    case DType::kI16:
      return add_integers<int16_t>(dst, src, count);
    case DType::kI32:
      return add_integers<int32_t>(dst, src, count);
    case DType::kI64:
      return add_integers<int64_t>(dst, src, count);
    case DType::kU8:
      return add_integers<uint8_t>(dst, src, count);
    case DType::kBool:
      break;
  }
  throw ProgramError(*atomic_add_unsupported(DType::kBool));
}

const char* cmp_name(int32_t cmp) {
  switch (cmp) {
    case PYPTO_CMP_EQ:
      return "eq";
    case PYPTO_CMP_NE:
      return "ne";
    case PYPTO_CMP_GT:
      return "gt";
    case PYPTO_CMP_GE:
      return "ge";
    case PYPTO_CMP_LT:
      return "lt";
    case PYPTO_CMP_LE:
      return "le";
  }
  return nullptr;
}

bool compare(int32_t value, int32_t cmp, int32_t expected) {
  switch (cmp) {
    case PYPTO_CMP_EQ:
      return value == expected;
    case PYPTO_CMP_NE:
      return value != expected;
    case PYPTO_CMP_GT:
      return value > expected;
    case PYPTO_CMP_GE:
      return value >= expected;
    case PYPTO_CMP_LT:
      return value < expected;
    case PYPTO_CMP_LE:
      return value <= expected;
  }
  return false;
}

}  // namespace pypto::rank
