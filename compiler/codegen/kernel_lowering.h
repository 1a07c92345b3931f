// Lowering one checked kernel to its tile-level listing (ptoas/<unit>.pto,
// docs/pto-format.md) and to the C++ body that pypto-ptoas makes of that
// listing (ptoas/<unit>.cpp), which the build's kernel source carries between
// its two sentinel lines. This header is the contract between the kernel
// lowering (compiler/pto_*.cc, lower_kernel.cc) and the build-directory code
// generator (compiler/codegen_*.cc).
//
// The body contract: cpp_body defines exactly one function with internal
// linkage,
//     static void ptoas_<unit>(const pypto_kernel_args* args)
// that does the kernel's whole work from the ABI arguments (tensors in
// parameter order — the kernel's tensor and window parameters are tensors
// here, see below — then scalars, then args->ctx), compiled with
// -std=c++17 after `#include "pypto/kernel_abi.h"` and `#include
// "pypto/tile.h"` (which the wrapper includes; the body includes nothing).
// The wrapper written by the code generator checks the ABI version and the
// argument counts, then calls ptoas_<unit>(args). A body that fails (a comm
// call returning nonzero) returns early; errors go through
// ctx->hooks->report_error.
//
// Windows: a kernel's window parameters are not tensors of the task; the body
// finds them in ctx->windows by name (pypto_window::name) and uses their `id`
// for comm calls, as the hand-written fixtures do (tests/fixtures/l3).
#pragma once

#include <cstdint>
#include <string>

#include "compiler/frontend/ast.h"

namespace pypto::compiler {

struct LoweredKernel {
  std::string unit;      // the kernel's name; file stem of ptoas/<unit>.pto and .cpp
  std::string pto;       // the listing
  std::string cpp_body;  // pypto-ptoas's output for `pto`: defines ptoas_<unit>
};

struct LowerOptions {
  int64_t world = 1;  // WORLD
  // The program's files: when set, a ProgramError reads
  // "file:line:col: error: ..." with the source line and a caret.
  const SourceManager* sources = nullptr;
};

// `kernel` must belong to a program the checker accepted (its expressions typed and
// constants folded). Throws ProgramError for a construct the lowering does not
// support yet, naming it and its file:line:col.
LoweredKernel lower_kernel(const Function& kernel, const LowerOptions& options);

}  // namespace pypto::compiler
