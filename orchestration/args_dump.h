// Copies of tensor views for --dump-args.
#pragma once

#include <string>

#include "pypto/kernel_abi.h"

namespace pypto::chip {

// The elements of `view` in C order, as raw little-endian bytes.
std::string view_bytes(const pypto_tensor& view);

}  // namespace pypto::chip
