#include "pypto/tensor.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>

namespace pypto {

namespace {

constexpr std::align_val_t kAlignment{64};
constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();

[[noreturn]] void fail(const char* where, const std::string& problem) {
  throw ProgramError(std::string(where) + ": " + problem);
}

// Checks the extents and that every byte offset of a row-major buffer of this
// shape fits in int64 (extent 0 counts as 1, as in NumPy's stride rule, so
// strides stay representable too). Returns numel.
int64_t checked_numel(const char* where, DType dtype, std::span<const int64_t> shape) {
  int64_t numel = 1;
  int64_t span = static_cast<int64_t>(dtype_size(dtype));
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0) {
      fail(where, "shape " + shape_string(shape) + " has a negative extent (" +
                      std::to_string(shape[d]) + ") in dimension " + std::to_string(d));
    }
    if (__builtin_mul_overflow(span, std::max<int64_t>(shape[d], 1), &span)) {
      fail(where, "shape " + shape_string(shape) + " of " + dtype_name(dtype) +
                      " is too large: its size in bytes does not fit in 64 bits");
    }
    numel *= shape[d];  // cannot overflow: bounded by span
  }
  return numel;
}

struct AlignedDelete {
  void operator()(std::byte* p) const { ::operator delete(p, kAlignment); }
};

// Copies `count` elements of N bytes with element strides ds / ss.
template <size_t N>
void copy_run(std::byte* dst, int64_t ds, const std::byte* src, int64_t ss, int64_t count) {
  for (int64_t i = 0; i < count; ++i) std::memcpy(dst + i * ds * N, src + i * ss * N, N);
}

void copy_run(std::byte* dst, int64_t ds, const std::byte* src, int64_t ss, int64_t count,
              size_t esize) {
  if (ds == 1 && ss == 1) {
    std::memcpy(dst, src, static_cast<size_t>(count) * esize);
    return;
  }
  switch (esize) {
    case 1:
      return copy_run<1>(dst, ds, src, ss, count);
    case 2:
      return copy_run<2>(dst, ds, src, ss, count);
    case 4:
      return copy_run<4>(dst, ds, src, ss, count);
    case 8:
      return copy_run<8>(dst, ds, src, ss, count);
    default:
      for (int64_t i = 0; i < count; ++i) {
        std::memcpy(dst + i * ds * static_cast<int64_t>(esize),
                    src + i * ss * static_cast<int64_t>(esize), esize);
      }
  }
}

// Copies every element of `shape` between two strided layouts, one innermost row at a time.
void strided_copy(std::byte* dst, std::span<const int64_t> dst_strides, const std::byte* src,
                  std::span<const int64_t> src_strides, std::span<const int64_t> shape,
                  size_t esize) {
  for (int64_t extent : shape)
    if (extent == 0) return;
  const size_t nd = shape.size();
  if (nd == 0) {
    std::memcpy(dst, src, esize);
    return;
  }
  const auto es = static_cast<int64_t>(esize);
  std::vector<int64_t> index(nd - 1, 0);
  while (true) {
    int64_t doff = 0;
    int64_t soff = 0;
    for (size_t d = 0; d + 1 < nd; ++d) {
      doff += index[d] * dst_strides[d];
      soff += index[d] * src_strides[d];
    }
    copy_run(dst + doff * es, dst_strides[nd - 1], src + soff * es, src_strides[nd - 1],
             shape[nd - 1], esize);
    // Advance the outer index like an odometer; done when it wraps around.
    size_t d = nd - 1;
    while (d > 0 && ++index[d - 1] == shape[d - 1]) {
      index[d - 1] = 0;
      --d;
    }
    if (d == 0) return;
  }
}

}  // namespace

std::string shape_string(std::span<const int64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

Shape row_major_strides(std::span<const int64_t> shape) {
  Shape strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= std::max<int64_t>(shape[d], 1);
  }
  return strides;
}

Tensor Tensor::allocate(DType dtype, const Shape& shape, bool zero_fill) {
  const int64_t numel = checked_numel("Tensor::empty", dtype, shape);
  const size_t bytes = static_cast<size_t>(numel) * dtype_size(dtype);
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.strides_ = row_major_strides(shape);
  try {
    auto* p = static_cast<std::byte*>(::operator new(bytes, kAlignment));
    t.owner_ = std::shared_ptr<std::byte>(p, AlignedDelete{});
  } catch (const std::bad_alloc&) {
    throw InfraError("cannot allocate " + std::to_string(bytes) + " bytes for tensor " +
                     t.describe());
  }
  t.base_ = t.owner_.get();
  if (zero_fill && bytes > 0) std::memset(t.base_, 0, bytes);
  return t;
}

Tensor Tensor::empty(DType dtype, const Shape& shape) { return allocate(dtype, shape, true); }

Tensor Tensor::adopt(std::shared_ptr<std::byte> data, DType dtype, const Shape& shape) {
  checked_numel("Tensor::adopt", dtype, shape);
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.strides_ = row_major_strides(shape);
  t.owner_ = std::move(data);
  t.base_ = t.owner_.get();
  return t;
}

Tensor Tensor::borrow(void* data, DType dtype, const Shape& shape, const Shape& strides,
                      int64_t offset) {
  constexpr const char* kWhere = "Tensor::borrow";
  const int64_t numel = checked_numel(kWhere, dtype, shape);
  if (!strides.empty() && strides.size() != shape.size()) {
    fail(kWhere, "strides " + shape_string(strides) + " has " + std::to_string(strides.size()) +
                     " entries but shape " + shape_string(shape) + " has " +
                     std::to_string(shape.size()));
  }
  for (size_t d = 0; d < strides.size(); ++d) {
    if (strides[d] < 0) {
      fail(kWhere, "strides " + shape_string(strides) + " has a negative stride in dimension " +
                       std::to_string(d) + "; only non-negative strides are supported");
    }
  }
  if (offset < 0) fail(kWhere, "negative element offset " + std::to_string(offset));
  if (numel > 0 && data == nullptr) {
    fail(kWhere, "null data for a tensor of shape " + shape_string(shape) + " with " +
                     std::to_string(numel) + " elements");
  }
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.strides_ = strides.empty() ? row_major_strides(shape) : strides;
  t.offset_ = offset;
  t.base_ = static_cast<std::byte*>(data);
  if (numel > 0) {
    // The byte offset one past the furthest element must be representable.
    int64_t last = offset;
    bool overflow = false;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t step = 0;
      overflow |= __builtin_mul_overflow(shape[d] - 1, t.strides_[d], &step);
      overflow |= __builtin_add_overflow(last, step, &last);
    }
    int64_t end_bytes = 0;
    overflow |= __builtin_add_overflow(last, int64_t{1}, &last);
    overflow |= __builtin_mul_overflow(last, static_cast<int64_t>(dtype_size(dtype)), &end_bytes);
    if (overflow) {
      fail(kWhere, "strides " + shape_string(t.strides_) + " with offset " +
                       std::to_string(offset) + " address elements beyond 2^63 bytes");
    }
  }
  return t;
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t extent : shape_) n *= extent;
  return n;
}

bool Tensor::is_contiguous() const {
  if (numel() == 0) return true;
  int64_t expected = 1;
  for (size_t d = shape_.size(); d-- > 0;) {
    if (shape_[d] != 1 && strides_[d] != expected) return false;
    expected *= shape_[d];
  }
  return true;
}

std::byte* Tensor::element_ptr() const {
  // Without elements the offset may point past the buffer; don't form that pointer.
  if (base_ == nullptr || numel() == 0) return base_;
  return base_ + offset_ * static_cast<int64_t>(element_size());
}

void Tensor::check_element_type(size_t size) const {
  if (size != element_size()) {
    throw ProgramError("Tensor::data_as: a " + std::to_string(size) +
                       "-byte element type does not match " + describe() + " (" +
                       std::to_string(element_size()) + "-byte elements)");
  }
}

std::span<const std::byte> Tensor::bytes() const {
  if (!is_contiguous()) {
    throw ProgramError("Tensor::bytes: " + describe() + " with strides " + shape_string(strides_) +
                       " is not contiguous; use contiguous() first");
  }
  return {element_ptr(), nbytes()};
}

Tensor Tensor::contiguous() const {
  Tensor out = allocate(dtype_, shape_, false);
  if (is_contiguous()) {
    if (nbytes() > 0) std::memcpy(out.base_, element_ptr(), nbytes());
  } else {
    strided_copy(out.base_, out.strides_, element_ptr(), strides_, shape_, element_size());
  }
  return out;
}

Tensor Tensor::slice(const Shape& offsets, const Shape& sizes) const {
  constexpr const char* kWhere = "Tensor::slice";
  if (offsets.size() != shape_.size() || sizes.size() != shape_.size()) {
    fail(kWhere, "offsets " + shape_string(offsets) + " and sizes " + shape_string(sizes) +
                     " must each have one entry per dimension of " + describe());
  }
  for (size_t d = 0; d < shape_.size(); ++d) {
    if (offsets[d] < 0 || sizes[d] < 0 || offsets[d] > shape_[d] ||
        sizes[d] > shape_[d] - offsets[d]) {
      fail(kWhere, "offsets " + shape_string(offsets) + " sizes " + shape_string(sizes) +
                       " are out of range of " + describe() + " in dimension " + std::to_string(d));
    }
  }
  Tensor view = *this;
  view.shape_ = sizes;
  if (view.numel() > 0) {
    // Every offset is below its extent here, so this stays within the parent's elements.
    for (size_t d = 0; d < shape_.size(); ++d) view.offset_ += offsets[d] * strides_[d];
  }
  return view;
}

void Tensor::copy_from(const Tensor& src) {
  if (src.dtype_ != dtype_ || src.shape_ != shape_) {
    throw ProgramError("Tensor::copy_from: cannot copy " + src.describe() + " into " + describe() +
                       "; dtype and shape must match");
  }
  if (is_contiguous() && src.is_contiguous()) {
    if (nbytes() > 0) std::memcpy(element_ptr(), src.element_ptr(), nbytes());
    return;
  }
  strided_copy(element_ptr(), strides_, src.element_ptr(), src.strides_, shape_, element_size());
}

std::string Tensor::describe() const {
  return std::string(dtype_name(dtype_)) + shape_string(shape_);
}

}  // namespace pypto
