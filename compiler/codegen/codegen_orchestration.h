// Chip orchestration C++ (orchestration/<chip>.cpp of a build directory) from
// a checked chip function. Each kernel call becomes a task submitted through
// pypto_orch_api::submit with the kernel's tensor parameters as views of the
// orchestration's tensors (slices from view(...) and x[i]) and its scalar
// parameters; loops and conditions become C++ loops and conditions; chip
// functions called from it are inlined. Window parameters are not task
// arguments: the runtime hands a dispatch's windows to every kernel through
// its context, where kernels find them by name.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/codegen/codegen_util.h"
#include "compiler/frontend/ast.h"
#include "compiler/frontend/source.h"

namespace pypto::compiler {

struct OrchestrationOptions {
  std::map<std::string, int64_t> func_ids;  // kernel name -> func_id in kernel_config.json
  std::string origin;                       // the program file, for the header comment
  const SourceManager* sources = nullptr;   // for file:line:col in errors
};

// A kernel's window parameter and the window parameter of the generated chip
// function that reaches it (through inlined chip calls and lets).
struct KernelWindowUse {
  const Function* kernel = nullptr;
  std::string kernel_param;
  std::string chip_param;
  Span span;  // the kernel call
};

struct GeneratedOrchestration {
  std::string source;
  std::vector<KernelWindowUse> window_uses;
};

// The C++ source exporting `extern "C" void orchestration_entry(const
// pypto_orch_args*)` for `chip`. Its argument convention is the chip
// function's signature (signature_of): tensors in args->tensors, scalars in
// args->scalars (floating-point ones as bit patterns), windows in
// args->windows. A tensor argument may carry extra leading extents of 1 (a
// host box x[r] of an L3 dispatch arrives as [1, ...]); it is viewed with the
// declared shape. Throws ProgramError (file:line:col) for what it cannot
// generate yet.
GeneratedOrchestration generate_orchestration(const Function& chip, const FunctionTable& table,
                                              const OrchestrationOptions& options);

}  // namespace pypto::compiler
