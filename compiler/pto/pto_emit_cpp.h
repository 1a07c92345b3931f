// PTO unit -> the C++ body of its kernel (compiler/codegen/kernel_lowering.h):
//     static void ptoas_<unit>(const pypto_kernel_args* args)
// compiled after pypto/kernel_abi.h and pypto/tile.h. Tiles live in one
// per-thread scratch buffer; each tile instruction is a call into
// pypto::tile::pto (include/pypto/pto_runtime.h), whose f32
// paths use tile.h's vectorized elementwise helpers and register-blocked
// matmul. The unit must be valid (as pto::parse returns it).
#pragma once

#include <string>

#include "compiler/pto/pto_ir.h"

namespace pypto::compiler::pto {

std::string emit_cpp(const Unit& unit);

}  // namespace pypto::compiler::pto
