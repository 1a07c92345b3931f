// Element arithmetic the data plane needs on plain memory: atomic adds of
// every window dtype (used on shared-memory windows, where a peer's copy is
// mapped into this process), f16/bf16 conversions for the emulated 16-bit
// float adds, and the wait comparisons. No MPI here, so all of it is unit
// tested without mpirun.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "pypto/dtype.h"

namespace pypto::rank {

// IEEE half <-> float, round to nearest even; NaN stays NaN, overflow -> inf.
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
// bfloat16 <-> float, round to nearest even.
float bf16_to_f32(uint16_t b);
uint16_t f32_to_bf16(float f);

// Adds src[i] to the old value in place, 16-bit float pattern in and out.
uint16_t add_f16_bits(uint16_t old_bits, uint16_t add_bits, DType dtype);

// Why `dtype` has no atomic add, or nullopt when it has one (bool has none).
std::optional<std::string> atomic_add_unsupported(DType dtype);

// dst[i] += src[i] for i < count, each element one atomic read-modify-write
// (integers: fetch_add; f32: 32-bit CAS loop; f16/bf16: 16-bit CAS loop on
// the converted value). dst must be aligned to the element size; src need
// not be. Works on memory shared between processes: the atomics are
// lock-free and address-free. Throws ProgramError for bool.
void atomic_add(void* dst, const void* src, uint64_t count, DType dtype);

// Wait comparisons (pypto_cmp): "eq" "ne" "gt" "ge" "lt" "le", nullptr if unknown.
const char* cmp_name(int32_t cmp);
bool compare(int32_t value, int32_t cmp, int32_t expected);

}  // namespace pypto::rank
