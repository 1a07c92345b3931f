// Kernel sources of a build directory (kernels/aic|aiv/<kernel>.cpp): the
// lowered body (pypto-ptoas output for ptoas/<unit>.pto) between the two
// sentinel lines the replay splice looks for, and an entry point that checks
// the ABI version and the argument counts and then calls ptoas_<unit>(args).
#pragma once

#include <cstdint>
#include <string>

#include "compiler/codegen/kernel_lowering.h"
#include "compiler/frontend/ast.h"

namespace pypto::compiler {

struct KernelSourceOptions {
  int64_t func_id = 0;
  std::string origin;  // the program file, for the header comment
};

// The body as ptoas/<unit>.cpp holds it and as it sits between the sentinels:
// LoweredKernel::cpp_body with a final newline.
std::string ptoas_body(const LoweredKernel& lowered);

// The whole kernel source. `kernel` supplies the argument counts (tensor
// parameters are the task's tensors; windows come through the context, scalars
// follow the tensors) and the name in error messages.
std::string generate_kernel_source(const Function& kernel, const LoweredKernel& lowered,
                                   const KernelSourceOptions& options);

}  // namespace pypto::compiler
