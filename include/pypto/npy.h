// NumPy .npy files (format versions 1.0, 2.0 and 3.0), the format host
// tensors cross process boundaries in (docs/tensors.md).
//
// Written files are byte-identical to numpy.save of the same C-contiguous
// array. bf16 is written with descr '<V2', exactly what numpy.save writes for
// an ml_dtypes.bfloat16 array; plain np.load returns it as a 2-byte void
// array and `.view(ml_dtypes.bfloat16)` restores the type. On reading,
// '<V2', '|V2' and 'bfloat16' (the name ml_dtypes registers) are bf16.
//
// Every malformed file is an ArtifactError naming the file, the part that is
// wrong and what is wrong; the size a header claims is checked against the
// bytes present before anything is allocated.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "pypto/dtype.h"
#include "pypto/tensor.h"

namespace pypto {

// The descr written for `dtype`: '<f4' '<f2' '<V2' '|i1' '<i2' '<i4' '<i8' '|u1' '|b1'.
const char* npy_descr(DType dtype);

// The dtype of a descr string; nullopt when unsupported. Accepts the byte-order
// characters '<', '=' and '|' (and '>' for one-byte types), the bare form ('f4'),
// '?' for bool and the bf16 spellings above. Big-endian multi-byte descrs are nullopt.
std::optional<DType> parse_npy_descr(std::string_view descr);

struct NpyHeader {
  int major_version = 1;
  DType dtype = DType::kF32;
  Shape shape;
  bool fortran_order = false;
  size_t data_offset = 0;  // where the array data starts in the file
  size_t data_bytes = 0;   // numel * element size
};

// Validates the magic, version and header dict of `bytes` (a whole file or at
// least its header); does not look at the data.
NpyHeader parse_npy_header(std::string_view bytes, const std::string& name_for_messages);

// An owned C-contiguous tensor from a whole .npy file in memory. Fortran-order
// files are transposed into C order. The data must be exactly the size the
// header claims: a short file or trailing bytes are errors.
Tensor parse_npy(std::string_view bytes, const std::string& name_for_messages);

// The .npy bytes numpy.save would write for the tensor (non-contiguous tensors
// are written as their C-contiguous copy).
std::string serialize_npy(const Tensor& tensor);

Tensor read_npy(const std::filesystem::path& path);

// Writes atomically (temporary sibling + rename).
void write_npy(const std::filesystem::path& path, const Tensor& tensor);

}  // namespace pypto
