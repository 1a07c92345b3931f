// Tensors as payload frames without copies (docs/protocol.md, "Messages"): a
// frame sent from a tensor keeps the tensor's buffer alive until ZeroMQ has
// sent it, and a tensor made from a received frame keeps the frame alive.
#pragma once

#include <zmq.hpp>

#include "pypto/tensor.h"

namespace pypto::wire {

// A frame over `tensor`'s elements: no copy when the tensor is contiguous (the
// buffer must not change until the message is sent), one packed copy otherwise.
zmq::message_t frame_of_tensor(const Tensor& tensor);

// A C-contiguous tensor of `dtype`/`shape` over the frame's bytes, owning the frame.
// The caller checked that the sizes agree. The bytes of a ZeroMQ frame are 8-byte
// aligned (enough for every dtype; not the 64 bytes of Tensor::empty); a tiny
// frame (held inside the message object) is copied.
Tensor tensor_of_frame(zmq::message_t frame, DType dtype, const Shape& shape);

}  // namespace pypto::wire
