#include "pypto/tensor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

namespace pypto {
namespace {

constexpr DType kAllDTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kI8,  DType::kI16,
                                DType::kI32, DType::kI64, DType::kU8,   DType::kBool};

// Runs `fn` and returns the ProgramError message it throws ("" when it does not throw).
template <class Fn>
std::string program_error(Fn fn) {
  try {
    fn();
  } catch (const ProgramError& e) {
    return e.what();
  }
  return "";
}

Tensor iota_i32(const Shape& shape) {
  Tensor t = Tensor::empty(DType::kI32, shape);
  std::iota(t.data_as<int32_t>(), t.data_as<int32_t>() + t.numel(), 0);
  return t;
}

std::vector<int32_t> values_i32(const Tensor& t) {
  const Tensor c = t.contiguous();
  return {c.data_as<int32_t>(), c.data_as<int32_t>() + c.numel()};
}

TEST(TensorTest, EmptyIsOwnedZeroFilledAlignedAndRowMajor) {
  for (DType dtype : kAllDTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor t = Tensor::empty(dtype, {2, 3, 5});
    EXPECT_EQ(t.dtype(), dtype);
    EXPECT_EQ(t.ndim(), 3);
    EXPECT_EQ(t.numel(), 30);
    EXPECT_EQ(t.element_size(), dtype_size(dtype));
    EXPECT_EQ(t.nbytes(), 30 * dtype_size(dtype));
    EXPECT_EQ(t.strides(), (Shape{15, 5, 1}));
    EXPECT_EQ(t.offset(), 0);
    EXPECT_TRUE(t.is_contiguous());
    EXPECT_TRUE(t.is_owned());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u);
    for (std::byte b : t.bytes()) EXPECT_EQ(b, std::byte{0});
  }
}

TEST(TensorTest, ZeroDimAndEmptyShapes) {
  Tensor scalar = Tensor::empty(DType::kF32, {});
  EXPECT_EQ(scalar.ndim(), 0);
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.nbytes(), 4u);
  EXPECT_TRUE(scalar.strides().empty());
  EXPECT_TRUE(scalar.is_contiguous());
  *scalar.data_as<float>() = 2.5f;
  EXPECT_EQ(*scalar.contiguous().data_as<float>(), 2.5f);

  Tensor none = Tensor::empty(DType::kI64, {0, 4});
  EXPECT_EQ(none.numel(), 0);
  EXPECT_EQ(none.nbytes(), 0u);
  EXPECT_EQ(none.strides(), (Shape{4, 1}));
  EXPECT_TRUE(none.is_contiguous());
  EXPECT_EQ(none.contiguous().numel(), 0);

  // NumPy's stride rule: a zero extent counts as 1.
  EXPECT_EQ(row_major_strides(Shape{3, 0, 2}), (Shape{2, 2, 1}));

  Tensor fresh;
  EXPECT_EQ(fresh.shape(), Shape{0});
  EXPECT_EQ(fresh.numel(), 0);
  EXPECT_EQ(fresh.data(), nullptr);
  EXPECT_EQ(fresh.describe(), "f32[0]");
}

TEST(TensorTest, RejectsNegativeAndOversizedShapes) {
  std::string msg = program_error([] { Tensor::empty(DType::kF32, {2, -1}); });
  EXPECT_NE(msg.find("Tensor::empty"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, -1]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("negative extent (-1) in dimension 1"), std::string::npos) << msg;

  msg = program_error([] { Tensor::empty(DType::kF32, {int64_t{1} << 40, int64_t{1} << 40}); });
  EXPECT_NE(msg.find("too large"), std::string::npos) << msg;
  // A zero extent does not hide an unrepresentable stride.
  msg = program_error([] { Tensor::empty(DType::kI8, {0, int64_t{1} << 40, int64_t{1} << 40}); });
  EXPECT_NE(msg.find("too large"), std::string::npos) << msg;
}

TEST(TensorTest, BorrowViewsCallerMemory) {
  std::vector<int16_t> buf(12);
  std::iota(buf.begin(), buf.end(), int16_t{0});
  Tensor t = Tensor::borrow(buf.data(), DType::kI16, {3, 4});
  EXPECT_FALSE(t.is_owned());
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.strides(), (Shape{4, 1}));
  EXPECT_EQ(t.data(), buf.data());
  t.data_as<int16_t>()[5] = 99;
  EXPECT_EQ(buf[5], 99);

  Tensor shifted = Tensor::borrow(buf.data(), DType::kI16, {2}, {}, 3);
  EXPECT_EQ(shifted.data_as<int16_t>()[0], 3);

  Tensor copy = t.contiguous();
  EXPECT_TRUE(copy.is_owned());
  EXPECT_NE(copy.data(), buf.data());
  buf[0] = -7;
  EXPECT_EQ(copy.data_as<int16_t>()[0], 0);
}

TEST(TensorTest, AdoptKeepsItsOwnerAliveWithoutCopying) {
  auto buffer = std::make_shared<std::vector<float>>(6, 1.5f);
  std::weak_ptr<std::vector<float>> alive = buffer;
  std::shared_ptr<std::byte> bytes(buffer, reinterpret_cast<std::byte*>(buffer->data()));
  const void* where = buffer->data();
  buffer.reset();
  Tensor t = Tensor::adopt(std::move(bytes), DType::kF32, {2, 3});
  EXPECT_EQ(t.data(), where);
  EXPECT_TRUE(t.is_contiguous());
  Tensor row = t.slice({1, 0}, {1, 3});
  t = Tensor();
  EXPECT_FALSE(alive.expired());  // the slice still holds it
  EXPECT_EQ(row.data_as<float>()[2], 1.5f);
  row = Tensor();
  EXPECT_TRUE(alive.expired());
}

TEST(TensorTest, BorrowRejectsBadLayouts) {
  float buf[8] = {};
  std::string msg = program_error([&] { Tensor::borrow(buf, DType::kF32, {2, 4}, {4}); });
  EXPECT_NE(msg.find("strides [4] has 1 entries but shape [2, 4] has 2"), std::string::npos) << msg;
  msg = program_error([&] { Tensor::borrow(buf, DType::kF32, {2, 4}, {-4, 1}); });
  EXPECT_NE(msg.find("negative stride in dimension 0"), std::string::npos) << msg;
  msg = program_error([&] { Tensor::borrow(buf, DType::kF32, {2}, {}, -1); });
  EXPECT_NE(msg.find("negative element offset -1"), std::string::npos) << msg;
  msg = program_error([&] { Tensor::borrow(nullptr, DType::kF32, {2}); });
  EXPECT_NE(msg.find("null data"), std::string::npos) << msg;
  msg = program_error([&] { Tensor::borrow(buf, DType::kF32, {2, 2}, {int64_t{1} << 62, 1}); });
  EXPECT_NE(msg.find("beyond 2^63 bytes"), std::string::npos) << msg;
  // No elements: a null pointer is fine.
  EXPECT_EQ(Tensor::borrow(nullptr, DType::kF32, {0, 3}).numel(), 0);
}

TEST(TensorTest, DataAsChecksTheElementSize) {
  Tensor t = Tensor::empty(DType::kF32, {2});
  EXPECT_NO_THROW(t.data_as<float>());
  EXPECT_NO_THROW(t.data_as<int32_t>());
  const std::string msg = program_error([&] { t.data_as<double>(); });
  EXPECT_NE(msg.find("8-byte element type does not match f32[2]"), std::string::npos) << msg;
}

TEST(TensorTest, SliceSharesStorageAndOutlivesItsParent) {
  Tensor parent = iota_i32({4, 5});
  Tensor view = parent.slice({1, 2}, {2, 3});
  EXPECT_EQ(view.shape(), (Shape{2, 3}));
  EXPECT_EQ(view.strides(), (Shape{5, 1}));
  EXPECT_EQ(view.offset(), 7);
  EXPECT_FALSE(view.is_contiguous());
  EXPECT_TRUE(view.is_owned());
  EXPECT_EQ(values_i32(view), (std::vector<int32_t>{7, 8, 9, 12, 13, 14}));
  EXPECT_EQ(view.data_as<int32_t>()[0], 7);

  view.data_as<int32_t>()[1] = -1;  // element (0, 1) of the view
  EXPECT_EQ(parent.data_as<int32_t>()[8], -1);

  Tensor inner = view.slice({1, 1}, {1, 2});
  EXPECT_EQ(inner.offset(), 13);
  EXPECT_EQ(values_i32(inner), (std::vector<int32_t>{13, 14}));

  parent = Tensor();  // the view keeps the buffer alive
  EXPECT_EQ(values_i32(inner), (std::vector<int32_t>{13, 14}));
}

TEST(TensorTest, SliceOfWholeRowsIsContiguous) {
  Tensor parent = iota_i32({4, 5});
  Tensor rows = parent.slice({1, 0}, {2, 5});
  EXPECT_TRUE(rows.is_contiguous());
  EXPECT_EQ(rows.bytes().size(), 40u);
  EXPECT_EQ(values_i32(rows), (std::vector<int32_t>{5, 6, 7, 8, 9, 10, 11, 12, 13, 14}));
  // Extent-1 dimensions may have any stride.
  Tensor column = parent.slice({0, 3}, {4, 1});
  EXPECT_FALSE(column.is_contiguous());
  Tensor one = parent.slice({2, 3}, {1, 1});
  EXPECT_TRUE(one.is_contiguous());
  EXPECT_EQ(values_i32(one), (std::vector<int32_t>{13}));
}

TEST(TensorTest, EmptySliceAtTheEnd) {
  Tensor parent = iota_i32({4, 5});
  Tensor none = parent.slice({4, 5}, {0, 0});
  EXPECT_EQ(none.numel(), 0);
  EXPECT_TRUE(none.is_contiguous());
  EXPECT_EQ(none.contiguous().numel(), 0);
}

TEST(TensorTest, SliceRejectsOutOfRangeAndRankMismatch) {
  Tensor t = iota_i32({4, 5});
  std::string msg = program_error([&] { t.slice({0}, {4}); });
  EXPECT_NE(msg.find("one entry per dimension of i32[4, 5]"), std::string::npos) << msg;
  msg = program_error([&] { t.slice({3, 0}, {2, 5}); });
  EXPECT_NE(msg.find("out of range of i32[4, 5] in dimension 0"), std::string::npos) << msg;
  msg = program_error([&] { t.slice({0, -1}, {1, 1}); });
  EXPECT_NE(msg.find("in dimension 1"), std::string::npos) << msg;
  msg = program_error([&] { t.slice({0, 0}, {1, INT64_MAX}); });
  EXPECT_NE(msg.find("in dimension 1"), std::string::npos) << msg;
}

TEST(TensorTest, ContiguousCopiesTransposedAndBroadcastViews) {
  std::vector<int32_t> buf = {0, 1, 2, 3, 4, 5};  // a 2x3 matrix
  Tensor transposed = Tensor::borrow(buf.data(), DType::kI32, {3, 2}, {1, 3});
  EXPECT_FALSE(transposed.is_contiguous());
  Tensor c = transposed.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.strides(), (Shape{2, 1}));
  EXPECT_EQ(values_i32(c), (std::vector<int32_t>{0, 3, 1, 4, 2, 5}));

  Tensor broadcast = Tensor::borrow(buf.data(), DType::kI32, {2, 3}, {0, 1});
  EXPECT_EQ(values_i32(broadcast), (std::vector<int32_t>{0, 1, 2, 0, 1, 2}));

  const std::string msg = program_error([&] { transposed.bytes(); });
  EXPECT_NE(msg.find("not contiguous"), std::string::npos) << msg;
}

TEST(TensorTest, ContiguousCopiesEveryElementSize) {
  for (DType dtype : kAllDTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    const size_t es = dtype_size(dtype);
    std::vector<std::byte> buf(24 * es);
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<std::byte>(i * 7 + 1);
    // Every other column of a 3-d array: an inner stride of 2.
    Tensor view = Tensor::borrow(buf.data(), dtype, {2, 3, 2}, {12, 4, 2});
    Tensor c = view.contiguous();
    const std::span<const std::byte> got = c.bytes();
    size_t k = 0;
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t l = 0; l < 2; ++l, ++k) {
          const size_t src = static_cast<size_t>(i * 12 + j * 4 + l * 2) * es;
          for (size_t b = 0; b < es; ++b) ASSERT_EQ(got[k * es + b], buf[src + b]);
        }
  }
}

TEST(TensorTest, CopyFromWritesIntoAStridedView) {
  Tensor dst = Tensor::empty(DType::kI32, {3, 4});
  Tensor src = iota_i32({2, 2});
  dst.slice({1, 1}, {2, 2}).copy_from(src);
  EXPECT_EQ(values_i32(dst), (std::vector<int32_t>{0, 0, 0, 0, 0, 0, 1, 0, 0, 2, 3, 0}));

  Tensor whole = Tensor::empty(DType::kI32, {2, 2});
  whole.copy_from(src);
  EXPECT_EQ(values_i32(whole), (std::vector<int32_t>{0, 1, 2, 3}));

  std::string msg = program_error([&] { whole.copy_from(iota_i32({4})); });
  EXPECT_NE(msg.find("cannot copy i32[4] into i32[2, 2]"), std::string::npos) << msg;
  msg = program_error([&] { whole.copy_from(Tensor::empty(DType::kF32, {2, 2})); });
  EXPECT_NE(msg.find("dtype and shape must match"), std::string::npos) << msg;
}

TEST(TensorTest, DescribeAndShapeString) {
  EXPECT_EQ(Tensor::empty(DType::kBF16, {2, 3}).describe(), "bf16[2, 3]");
  EXPECT_EQ(Tensor::empty(DType::kBool, {}).describe(), "bool[]");
  EXPECT_EQ(shape_string(Shape{7}), "[7]");
}

}  // namespace
}  // namespace pypto
