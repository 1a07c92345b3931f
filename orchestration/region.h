// The memory a tensor view touches, and whether two views can touch the same
// bytes. Dependency inference (tensor_map.h) asks this for every argument.
#pragma once

#include <cstdint>

#include "pypto/kernel_abi.h"

namespace pypto::chip {

struct Region {
  const void* base = nullptr;  // the tensor's data pointer; views of one tensor share it
  int64_t element_size = 0;
  int32_t ndim = 0;
  int64_t offset = 0;  // elements
  int64_t shape[PYPTO_MAX_DIMS] = {};
  int64_t strides[PYPTO_MAX_DIMS] = {};
  // Bounding interval of touched bytes, [lo, hi), relative to base.
  int64_t lo = 0;
  int64_t hi = 0;

  static Region of(const pypto_tensor& view);
  bool empty() const { return lo >= hi; }
  // True when `other` touches every element this region touches: a write to
  // `other` supersedes earlier accesses to this region.
  bool covered_by(const Region& other) const;
};

// Conservative: true whenever the views may share an element. Views of the
// same tensor with the same strides are compared box by box (exact for tiles
// of a row-major tensor); anything else falls back to the bounding intervals.
bool overlaps(const Region& a, const Region& b);

}  // namespace pypto::chip
