#include "orchestration/region.h"

#include <algorithm>

namespace pypto::chip {

namespace {

size_t element_size_of(int32_t dtype) {
  switch (dtype) {
    case PYPTO_F32: case PYPTO_I32: return 4;
    case PYPTO_F16: case PYPTO_BF16: case PYPTO_I16: return 2;
    case PYPTO_I64: return 8;
    default: return 1;
  }
}

// Per-dimension start indices of `r` in the layout its strides describe, when
// that layout is a proper nesting (each stride a multiple of the next, the box
// never wrapping past its parent dimension). Dimensions are ordered by the
// caller's stride order, which both regions share.
bool box_starts(const Region& r, int64_t* starts) {
  int64_t rem = r.offset;
  for (int d = 0; d < r.ndim; ++d) {
    const int64_t stride = r.strides[d];
    if (stride <= 0) return false;
    if (d > 0) {
      const int64_t parent = r.strides[d - 1];
      if (parent % stride != 0) return false;
    }
    starts[d] = rem / stride;
    rem %= stride;
    if (d > 0 && starts[d] + r.shape[d] > r.strides[d - 1] / stride) return false;
  }
  return rem == 0;
}

bool same_layout(const Region& a, const Region& b) {
  if (a.ndim != b.ndim || a.element_size != b.element_size) return false;
  for (int d = 0; d < a.ndim; ++d)
    if (a.strides[d] != b.strides[d]) return false;
  for (int d = 1; d < a.ndim; ++d)
    if (a.strides[d - 1] < a.strides[d]) return false;  // only descending (row-major-like)
  return true;
}

}  // namespace

Region Region::of(const pypto_tensor& view) {
  Region r;
  r.base = view.data;
  r.element_size = static_cast<int64_t>(element_size_of(view.dtype));
  r.ndim = std::clamp(view.ndim, 0, PYPTO_MAX_DIMS);
  r.offset = view.offset;
  int64_t lo = view.offset, hi = view.offset;
  bool empty = false;
  for (int d = 0; d < r.ndim; ++d) {
    r.shape[d] = view.shape[d];
    r.strides[d] = view.strides[d];
    if (view.shape[d] <= 0) empty = true;
    const int64_t span = (view.shape[d] - 1) * view.strides[d];
    (span < 0 ? lo : hi) += span;
  }
  r.lo = lo * r.element_size;
  r.hi = empty ? r.lo : (hi + 1) * r.element_size;
  return r;
}

bool Region::covered_by(const Region& other) const {
  if (base != other.base || empty()) return false;
  if (!same_layout(*this, other)) {
    // Only a dense other can be proven to cover by interval alone.
    return false;
  }
  int64_t sa[PYPTO_MAX_DIMS], sb[PYPTO_MAX_DIMS];
  if (!box_starts(*this, sa) || !box_starts(other, sb)) return false;
  for (int d = 0; d < ndim; ++d)
    if (sa[d] < sb[d] || sa[d] + shape[d] > sb[d] + other.shape[d]) return false;
  return true;
}

bool overlaps(const Region& a, const Region& b) {
  if (a.base != b.base || a.empty() || b.empty()) return false;
  if (a.hi <= b.lo || b.hi <= a.lo) return false;
  if (!same_layout(a, b)) return true;
  int64_t sa[PYPTO_MAX_DIMS], sb[PYPTO_MAX_DIMS];
  if (!box_starts(a, sa) || !box_starts(b, sb)) return true;
  for (int d = 0; d < a.ndim; ++d)
    if (sa[d] + a.shape[d] <= sb[d] || sb[d] + b.shape[d] <= sa[d]) return false;
  return true;
}

}  // namespace pypto::chip
