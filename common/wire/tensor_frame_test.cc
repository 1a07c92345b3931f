#include "common/wire/tensor_frame.h"

#include <gtest/gtest.h>

#include <numeric>

namespace pypto::wire {
namespace {

TEST(TensorFrameTest, ContiguousTensorIsSentWithoutACopy) {
  Tensor t = Tensor::empty(DType::kF32, {4, 8});
  std::iota(t.data_as<float>(), t.data_as<float>() + 32, 0.0f);
  zmq::message_t frame = frame_of_tensor(t);
  EXPECT_EQ(frame.data(), t.data());
  EXPECT_EQ(frame.size(), 32 * sizeof(float));
  t = Tensor();  // the frame keeps the buffer alive
  EXPECT_EQ(static_cast<const float*>(frame.data())[31], 31.0f);
}

TEST(TensorFrameTest, StridedViewIsPackedOnce) {
  Tensor t = Tensor::empty(DType::kI32, {3, 4});
  std::iota(t.data_as<int32_t>(), t.data_as<int32_t>() + 12, 0);
  const Tensor column = t.slice({0, 1}, {3, 1});
  zmq::message_t frame = frame_of_tensor(column);
  ASSERT_EQ(frame.size(), 3 * sizeof(int32_t));
  const auto* values = static_cast<const int32_t*>(frame.data());
  EXPECT_EQ(values[0], 1);
  EXPECT_EQ(values[1], 5);
  EXPECT_EQ(values[2], 9);
}

TEST(TensorFrameTest, ReceivedFrameBecomesATensorInPlace) {
  std::vector<int16_t> values(2 * 1024);
  std::iota(values.begin(), values.end(), int16_t{0});
  zmq::message_t frame(values.data(), values.size() * sizeof(int16_t));
  const void* where = frame.data();
  Tensor t = tensor_of_frame(std::move(frame), DType::kI16, {2, 1024});
  EXPECT_EQ(t.data(), where);
  EXPECT_EQ(t.data_as<int16_t>()[1025], 1025);
  t.data_as<int16_t>()[0] = -1;  // writable: an InOut kernel writes in place
  EXPECT_EQ(t.slice({0, 0}, {1, 1}).data_as<int16_t>()[0], -1);
}

TEST(TensorFrameTest, TinyFrameIsCopiedToAnAlignedBuffer) {
  std::vector<float> values{1, 2, 3};
  zmq::message_t frame(values.data(), values.size() * sizeof(float));
  Tensor t = tensor_of_frame(std::move(frame), DType::kF32, {3});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u);  // Tensor::empty's
  EXPECT_EQ(t.data_as<float>()[2], 3.0f);
}

TEST(TensorFrameTest, EmptyTensorIsAnEmptyFrame) {
  EXPECT_EQ(frame_of_tensor(Tensor::empty(DType::kF32, {0, 3})).size(), 0u);
}

}  // namespace
}  // namespace pypto::wire
