#include "common/wire/tensor_frame.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

namespace pypto::wire {

zmq::message_t frame_of_tensor(const Tensor& tensor) {
  auto* held = new Tensor(tensor.is_contiguous() ? tensor : tensor.contiguous());
  const std::span<const std::byte> bytes = held->bytes();
  if (bytes.empty()) {
    delete held;
    return zmq::message_t();
  }
  // ZeroMQ calls the free function once the frame is sent (or dropped).
  return zmq::message_t(
      const_cast<std::byte*>(bytes.data()), bytes.size(),
      [](void*, void* hint) { delete static_cast<Tensor*>(hint); }, held);
}

Tensor tensor_of_frame(zmq::message_t frame, DType dtype, const Shape& shape) {
  // ZeroMQ keeps very small frames inside the message object, at no particular
  // alignment: those few bytes are copied. Others follow a malloc'ed header, 8-byte
  // aligned: enough for every element type (at most 8 bytes).
  if (reinterpret_cast<uintptr_t>(frame.data()) % 8 != 0 || frame.size() < 64) {
    Tensor copy = Tensor::empty(dtype, shape);
    if (frame.size()) std::memcpy(copy.data(), frame.data(), frame.size());
    return copy;
  }
  auto owner = std::make_shared<zmq::message_t>(std::move(frame));
  std::shared_ptr<std::byte> bytes(owner, static_cast<std::byte*>(owner->data()));
  return Tensor::adopt(std::move(bytes), dtype, shape);
}

}  // namespace pypto::wire
