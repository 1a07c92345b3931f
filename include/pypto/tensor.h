// A host tensor: dtype, shape, strides and a byte buffer that is either owned
// (shared, 64-byte aligned) or borrowed from the caller. Host tensors cross
// process boundaries as .npy files (include/pypto/npy.h, docs/tensors.md).
//
// Tensor is a shallow handle, like a NumPy array: copying it, or taking a
// slice, shares the buffer. contiguous() is the deep copy. Strides and the
// offset count ELEMENTS, not bytes. Shape errors throw ProgramError.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "pypto/dtype.h"
#include "pypto/error.h"

namespace pypto {

using Shape = std::vector<int64_t>;

// "[2, 3]" (and "[]" for a 0-d shape), for messages.
std::string shape_string(std::span<const int64_t> shape);

// Row-major strides (in elements) of `shape`.
Shape row_major_strides(std::span<const int64_t> shape);

class Tensor {
 public:
  // f32 of shape [0]: no elements, no storage.
  Tensor() = default;

  // An owned, zero-filled, C-contiguous tensor; the buffer is 64-byte aligned.
  static Tensor empty(DType dtype, const Shape& shape);

  // A view of memory the caller keeps alive for as long as the tensor (and
  // every copy or slice of it) is used. Empty `strides` means row-major.
  static Tensor borrow(void* data, DType dtype, const Shape& shape, const Shape& strides = {},
                       int64_t offset = 0);

  // A C-contiguous tensor over `data`, which it keeps alive (with every copy or
  // slice of it): memory owned elsewhere, e.g. a received message. No copy.
  static Tensor adopt(std::shared_ptr<std::byte> data, DType dtype, const Shape& shape);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  int64_t ndim() const { return static_cast<int64_t>(shape_.size()); }
  size_t element_size() const { return dtype_size(dtype_); }
  int64_t numel() const;
  // Bytes of the logical elements (numel * element_size), not of the buffer.
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  // C-contiguous: the elements are packed row-major from data(). Strides of
  // extent-1 dimensions do not matter; a tensor without elements is contiguous.
  bool is_contiguous() const;
  // True when the buffer is owned by this tensor or shared with the tensor it was sliced from.
  bool is_owned() const { return owner_ != nullptr; }

  // Element 0 (the offset applied); nullptr when there is no buffer.
  void* data() { return element_ptr(); }
  const void* data() const { return element_ptr(); }

  // data() typed; throws ProgramError when sizeof(T) differs from the element size.
  template <class T>
  T* data_as() {
    check_element_type(sizeof(T));
    return static_cast<T*>(data());
  }
  template <class T>
  const T* data_as() const {
    check_element_type(sizeof(T));
    return static_cast<const T*>(data());
  }

  // The packed element bytes of a contiguous tensor; throws ProgramError otherwise.
  std::span<const std::byte> bytes() const;

  // An owned C-contiguous deep copy (always a copy, even when already contiguous).
  Tensor contiguous() const;

  // The view [offsets[d], offsets[d] + sizes[d]) of every dimension d. It
  // shares the buffer (and keeps an owned one alive).
  Tensor slice(const Shape& offsets, const Shape& sizes) const;

  // Copies the elements of `src` (same dtype and shape, any strides) into this
  // tensor's elements. The two must not overlap.
  void copy_from(const Tensor& src);

  // "f32[2, 3]", for messages.
  std::string describe() const;

 private:
  static Tensor allocate(DType dtype, const Shape& shape, bool zero_fill);
  std::byte* element_ptr() const;
  void check_element_type(size_t size) const;

  DType dtype_ = DType::kF32;
  Shape shape_{0};
  Shape strides_{1};
  int64_t offset_ = 0;
  std::shared_ptr<std::byte> owner_;  // null for borrowed memory
  std::byte* base_ = nullptr;         // start of the buffer; element 0 is at base_ + offset_
};

}  // namespace pypto
